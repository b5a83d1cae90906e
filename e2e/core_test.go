package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

var publicNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// TestDefaultConfigAggregates is the README's first command: with no config,
// a client sees the tools of both demo servers and a call returns the demo
// server's answer.
func TestDefaultConfigAggregates(t *testing.T) {
	s := startSwitchboard(t, nil)
	cs := s.client(t, nil)
	var tools map[string]*mcp.Tool
	testutil.Eventually(t, 20*time.Second, "both demo servers listed", func() bool {
		tools = listTools(t, cs)
		return tools["mcp_clock_now"] != nil && tools["mcp_notes_add"] != nil
	})
	for name, tool := range tools {
		if !publicNameRE.MatchString(name) {
			t.Errorf("public name %q is not [A-Za-z0-9_-]{1,64}", name)
		}
		if !strings.HasPrefix(tool.Description, "[MCP server: ") {
			t.Errorf("%s description lacks the server prefix: %q", name, tool.Description)
		}
	}
	res := mustCall(t, cs, "mcp_clock_unix", map[string]any{})
	if res.IsError {
		t.Fatalf("mcp_clock_unix: %s", textOf(res))
	}
	now := time.Now().Unix()
	m := regexp.MustCompile(`\b(\d{10})\b`).FindStringSubmatch(textOf(res))
	if m == nil {
		t.Fatalf("no unix time in %q", textOf(res))
	}
	if got, _ := strconv.ParseInt(m[1], 10, 64); got < now-60 || got > now+60 {
		t.Errorf("unix time %d far from %d", got, now)
	}
	mustCall(t, cs, "mcp_notes_add", map[string]any{"title": "hello", "text": "from e2e"})
	if got := textOf(mustCall(t, cs, "mcp_notes_get", map[string]any{"title": "hello"})); !strings.Contains(got, "from e2e") {
		t.Errorf("notes round trip: %q", got)
	}
}

// TestFixtureOverEveryTransport aggregates the fixture over stdio, SSE and
// streamable HTTP at once, and checks that results through switchboard equal
// the same call made directly (wrapping off, so bytes can be compared).
func TestFixtureOverEveryTransport(t *testing.T) {
	httpURL, _ := startFixtureHTTP(t, "http", "--name", "web")
	sseURL, _ := startFixtureHTTP(t, "sse", "--name", "legacy")
	cfg := map[string]any{
		"sanitize": map[string]any{"wrapResults": false},
		"mcpServers": map[string]any{
			"local":  map[string]any{"command": fixture, "args": []string{"--name", "local", "--page-size", "2"}},
			"web":    map[string]any{"type": "http", "url": httpURL},
			"legacy": map[string]any{"type": "sse", "url": sseURL},
		},
	}
	s := startSwitchboard(t, cfg)
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "three servers listed", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_local_echo"] != nil && tools["mcp_web_echo"] != nil && tools["mcp_legacy_echo"] != nil
	})

	direct := map[string]*mcp.ClientSession{
		"web":    connectHTTP(t, httpURL, nil),
		"legacy": connectSSE(t, sseURL),
		"local":  connectStdio(t, fixture, "--name", "local"),
	}
	for server, dcs := range direct {
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"echo", map[string]any{"text": "héllo, wörld"}},
			{"add", map[string]any{"a": 2, "b": 40.5}},
			{"fail", map[string]any{"message": "nope"}},
		} {
			want := mustCall(t, dcs, call.tool, call.args)
			got := mustCall(t, cs, "mcp_"+server+"_"+call.tool, call.args)
			if !reflect.DeepEqual(normalize(t, got), normalize(t, want)) {
				t.Errorf("%s/%s through switchboard differs:\n got  %s\n want %s", server, call.tool, js(got), js(want))
			}
		}
	}
	// The tool definitions match too, apart from name and description.
	through := listTools(t, cs)
	for tool, err := range direct["web"].Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		pub := through["mcp_web_"+tool.Name]
		if pub == nil {
			t.Errorf("tool %s missing through switchboard", tool.Name)
			continue
		}
		if !reflect.DeepEqual(pub.InputSchema, tool.InputSchema) {
			t.Errorf("%s input schema changed: %s vs %s", tool.Name, js(pub.InputSchema), js(tool.InputSchema))
		}
		if !strings.Contains(pub.Description, tool.Description) {
			t.Errorf("%s description %q lost %q", tool.Name, pub.Description, tool.Description)
		}
	}
}

func normalize(t *testing.T, r *mcp.CallToolResult) any {
	var v any
	if err := json.Unmarshal([]byte(js(r)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func connectSSE(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func connectStdio(t *testing.T, name string, args ...string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := newCmd(name, args...)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestKilledUpstreamIsolated kills one upstream child: switchboard and the
// other server keep working, and the dead server's calls become isError
// results naming it (restart is off here, so it stays down).
func TestKilledUpstreamIsolated(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{
		"victim":   map[string]any{"command": fixture, "args": []string{"--name", "victim"}, "restartOnCrash": false},
		"survivor": map[string]any{"command": fixture, "args": []string{"--name", "survivor"}},
	}}
	s := startSwitchboard(t, cfg)
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "both listed", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_victim_pid"] != nil && tools["mcp_survivor_pid"] != nil
	})
	pid, err := strconv.Atoi(strings.TrimSpace(unwrap(textOf(mustCall(t, cs, "mcp_victim_pid", map[string]any{})))))
	if err != nil {
		t.Fatalf("victim pid: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "victim marked down", func() bool {
		st := s.serverStatus(t, "victim")
		return st != nil && st["state"] != "ready"
	})
	res := mustCall(t, cs, "mcp_survivor_echo", map[string]any{"text": "still here"})
	if res.IsError || !strings.Contains(textOf(res), "still here") {
		t.Errorf("survivor broken after the victim died: %s", js(res))
	}
	res, err = callTool(t, cs, "mcp_victim_echo", map[string]any{"text": "x"})
	if err != nil {
		// The victim failed for good (no restarts): its tools left the list,
		// so the call is an unknown tool.
		if !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("victim call: %v", err)
		}
	} else if !res.IsError || !strings.Contains(textOf(res), "victim") {
		t.Errorf("victim call should be an isError result naming the server: %s", js(res))
	}
	if pidAlive(pid) {
		t.Errorf("victim pid %d still alive", pid)
	}
}

// TestRestartingUpstreamGivesToolError: while a crashed server restarts, its
// tools stay listed and calls fail fast with a tool error naming it.
func TestRestartingUpstreamGivesToolError(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{
		"flaky": map[string]any{"command": fixture, "args": []string{"--name", "flaky", "--slow-start", "3s"}, "timeout": 10000},
	}}
	s := startSwitchboard(t, cfg)
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "flaky listed", func() bool { return listTools(t, cs)["mcp_flaky_crash"] != nil })
	_, _ = callTool(t, cs, "mcp_flaky_crash", map[string]any{"code": 3})
	testutil.Eventually(t, 10*time.Second, "flaky restarting", func() bool {
		st := s.serverStatus(t, "flaky")
		return st != nil && st["state"] == "restarting"
	})
	if listTools(t, cs)["mcp_flaky_echo"] == nil {
		t.Error("tools left the list while restarting")
	}
	start := time.Now()
	res := mustCall(t, cs, "mcp_flaky_echo", map[string]any{"text": "x"})
	if !res.IsError || !strings.Contains(textOf(res), "server 'flaky' is restarting") {
		t.Errorf("want a restarting tool error, got %s", js(res))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("restarting call took %s, want fail-fast", d)
	}
	testutil.Eventually(t, 20*time.Second, "flaky back", func() bool {
		res := mustCall(t, cs, "mcp_flaky_echo", map[string]any{"text": "back"})
		return !res.IsError && strings.Contains(textOf(res), "back")
	})
}

// TestUpstreamListChangedReachesClient: an upstream that adds a tool at run
// time shows it downstream after list_changed.
func TestUpstreamListChangedReachesClient(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{
		"dyn": map[string]any{"command": fixture, "args": []string{"--name", "dyn"}},
	}}
	s := startSwitchboard(t, cfg)
	changed := make(chan struct{}, 8)
	cs := s.client(t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	testutil.Eventually(t, 20*time.Second, "dyn listed", func() bool { return listTools(t, cs)["mcp_dyn_add_tool"] != nil })
	// Drain notifications from the initial listing.
	for len(changed) > 0 {
		<-changed
	}
	mustCall(t, cs, "mcp_dyn_add_tool", map[string]any{"name": "brand_new"})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after the upstream added a tool")
	}
	testutil.Eventually(t, 5*time.Second, "new tool listed", func() bool { return listTools(t, cs)["mcp_dyn_brand_new"] != nil })
	mustCall(t, cs, "mcp_dyn_remove_tool", map[string]any{"name": "brand_new"})
	testutil.Eventually(t, 10*time.Second, "removed tool gone", func() bool { return listTools(t, cs)["mcp_dyn_brand_new"] == nil })
}

// TestUnknownToolIsInvalidParams: an unknown tool is a JSON-RPC -32602.
func TestUnknownToolIsInvalidParams(t *testing.T) {
	s := startSwitchboard(t, nil)
	cs := s.client(t, nil)
	_, err := callTool(t, cs, "mcp_nope_nothing", map[string]any{})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != `unknown tool "mcp_nope_nothing"` {
		t.Errorf("want -32602 unknown tool, got %v", err)
	}
}

// TestValidateAndServeRejectBrokenConfig: validate prints every problem with
// its path and exits 2; serve refuses to start with the same message.
func TestValidateAndServeRejectBrokenConfig(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, dir, `{
  "mcpServers": {
    "a": { "type": "http" },
    "b": { "command": "x", "timeout": -1, "toolPrefix": "b_b" },
    "c": { "command": "y", "unknownField": 1 }
  },
  "tools": { "deny": [""] }
}`)
	v := start(t, dir, nil, switchboard, "validate", "--config", path)
	if code := v.wait(t, 20*time.Second); code != 2 {
		t.Errorf("validate exit code %d, want 2", code)
	}
	out := v.Stderr()
	if !strings.Contains(out, "mcpServers.c.unknownField: unknown field") {
		t.Errorf("validate output lacks the unknown field:\n%s", out)
	}
	// Schema errors come first; fix them and every semantic problem shows.
	path = writeConfig(t, dir, `{
  "mcpServers": {
    "a": { "type": "http" },
    "b": { "command": "x", "timeout": -1, "toolPrefix": "b_b" }
  },
  "tools": { "deny": [""] }
}`)
	v = start(t, dir, nil, switchboard, "validate", "--config", path)
	if code := v.wait(t, 20*time.Second); code != 2 {
		t.Errorf("validate exit code %d, want 2", code)
	}
	out = v.Stderr()
	for _, want := range []string{
		`mcpServers.a.url: required for transport "http"`,
		"mcpServers.b.timeout: must be a positive number of milliseconds",
		"mcpServers.b.toolPrefix: must match",
		"tools: deny[0]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	srv := start(t, dir, nil, switchboard, "serve", "--config", path, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	if code := srv.wait(t, 20*time.Second); code != 2 {
		t.Errorf("serve exit code %d, want 2", code)
	}
	if srv.Stderr() != out {
		t.Errorf("serve and validate disagree:\nserve:\n%s\nvalidate:\n%s", srv.Stderr(), out)
	}
	ok := writeConfig(t, dir, `{"mcpServers": {"a": {"command": "x"}}}`)
	v = start(t, dir, nil, switchboard, "validate", "--config", ok)
	if code := v.wait(t, 20*time.Second); code != 0 {
		t.Errorf("validate of a good config exit %d: %s", code, v.Stderr())
	}
}

// TestToolsCommand prints the aggregated table and exits.
func TestToolsCommand(t *testing.T) {
	dir := t.TempDir()
	p := startOut(t, dir, switchboard, "tools")
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("tools exit %d: %s", code, p.Stderr())
	}
	out := p.stdout.String()
	for _, want := range []string{"TOOL", "mcp_clock_now", "clock", "now", "mcp_notes_add", "[MCP server: notes]"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools output lacks %q:\n%s", want, out)
		}
	}
}

// TestStdioDownstream serves one client over stdin/stdout, with the go-sdk
// client's default protocol (2026-07-28: calls go through the server
// session) and with 2025-11-25 (calls answered beside it).
func TestStdioDownstream(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("protocol="+version, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			cmd := newCmd(switchboard, "serve", "--stdio")
			cmd.Stderr = os.Stderr
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			testutil.Eventually(t, 20*time.Second, "demo tools over stdio", func() bool { return listTools(t, cs)["mcp_clock_now"] != nil })
			if res := mustCall(t, cs, "mcp_clock_unix", map[string]any{}); res.IsError {
				t.Errorf("stdio call failed: %s", textOf(res))
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_clock_nope", Arguments: map[string]any{}})
			if err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("unknown tool over stdio: %v, %v", res, err)
			}
		})
	}
}

// TestStdioDownstreamBadLine: a stdin line that is not JSON-RPC gets a
// JSON-RPC parse error (id null) and the session goes on.
func TestStdioDownstreamBadLine(t *testing.T) {
	cmd := newCmd(switchboard, "serve", "--stdio")
	stderr := &proc{t: t}
	cmd.Stderr = lockedWriter{stderr}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("switchboard --stdio: %v\n%s", err, stderr.Stderr())
		}
	})
	out := bufio.NewReader(stdout)
	type reply struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	exchange := func(line string) reply {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v\n%s", line, err, stderr.Stderr())
		}
		var r reply
		if err := json.Unmarshal([]byte(got), &r); err != nil {
			t.Fatalf("reply %q: %v", got, err)
		}
		return r
	}
	if r := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`); r.Error != nil {
		t.Fatalf("initialize: %v", r.Error)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if r := exchange(`Content-Length: 52`); r.Error == nil || r.Error.Code != jsonrpc.CodeParseError || r.ID != nil {
		t.Errorf("a line that is not JSON: %+v, want a parse error with id null", r)
	}
	if r := exchange(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); r.Error != nil || r.ID != float64(2) {
		t.Errorf("ping after the bad line: %+v", r)
	}
	// A tools/call on a 2025-11-25 session is answered beside the server
	// session: one line, the same shape.
	testutil.Eventually(t, 20*time.Second, "a demo tool answers", func() bool {
		r := exchange(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"mcp_clock_unix","arguments":{}}}`)
		return r.ID == "c" && r.Error == nil && strings.Contains(string(r.Result), `"content":[{"type":"text"`)
	})
	// stderr is copied by another goroutine: give it a moment.
	testutil.Eventually(t, 5*time.Second, "the refused line logged", func() bool {
		return strings.Contains(stderr.Stderr(), "stdin line refused: not JSON-RPC")
	})
}

// unwrap returns the content inside an untrusted-content boundary, or s.
func unwrap(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) >= 4 && strings.HasPrefix(lines[0], "<<<EXTERNAL_UNTRUSTED_CONTENT") {
		return strings.Join(lines[2:len(lines)-1], "\n")
	}
	return s
}

// TestURLOnlyEntries: an entry with only a url (as Cursor and Claude Code
// write them) tries streamable HTTP and, when the endpoint refuses it with
// a 4xx, legacy SSE, as clients do; status shows which one it uses.
func TestURLOnlyEntries(t *testing.T) {
	t.Parallel()
	httpURL, _ := startFixtureHTTP(t, "http", "--name", "web")
	sseURL, _ := startFixtureHTTP(t, "sse", "--name", "legacy")
	if !strings.HasSuffix(sseURL, "/sse") {
		t.Fatalf("the SSE fixture serves %s, want a URL ending in /sse", sseURL)
	}
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"web":    map[string]any{"url": httpURL},
		"legacy": map[string]any{"url": sseURL},
	}})
	cs := s.client(t, nil)
	tools := listTools(t, cs)
	for _, server := range []string{"web", "legacy"} {
		if tools["mcp_"+server+"_echo"] == nil {
			t.Fatalf("%s's tools are not listed: %v", server, keys(tools))
		}
		if got := textOf(mustCall(t, cs, "mcp_"+server+"_echo", map[string]any{"text": "via " + server})); !strings.Contains(got, "via "+server) {
			t.Errorf("%s echo: %q", server, got)
		}
	}
	for server, want := range map[string]string{"web": "auto: http", "legacy": "auto: sse"} {
		if got := s.serverStatus(t, server)["transport"]; got != want {
			t.Errorf("%s transport in status: %v, want %q", server, got, want)
		}
	}
}
