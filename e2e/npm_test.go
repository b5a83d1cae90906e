package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// npmEnv puts the npm tool cache's bin (Node 22 among it) first on PATH, so
// `npx` and `#!/usr/bin/env node` scripts find the installed packages
// without the network.
func npmEnv(t *testing.T) []string {
	dir := npmDir(t)
	return []string{"PATH=" + filepath.Join(dir, "node_modules", ".bin") + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// TestClaudeDesktopFileWithEverything runs a Claude Desktop mcpServers file,
// unmodified, with @modelcontextprotocol/server-everything over stdio; the
// tools are listed under mcp_everything_* and calls answer as the server
// does directly (inside the untrusted-content boundary).
func TestClaudeDesktopFileWithEverything(t *testing.T) {
	dir := npmDir(t)
	env := npmEnv(t)
	cfg := `{
  "mcpServers": {
    "everything": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-everything"]
    }
  }
}`
	s := startSwitchboardIn(t, t.TempDir(), dir, cfg, env)
	cs := s.client(t, nil)
	var tools map[string]*mcp.Tool
	testutil.Eventually(t, 60*time.Second, "everything's tools", func() bool {
		tools = listTools(t, cs)
		return tools["mcp_everything_echo"] != nil && tools["mcp_everything_get-sum"] != nil
	})

	// Same (empty) client capabilities as switchboard offers upstream, so the
	// server registers the same tools for both.
	direct := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cmd := newCmd("npx", "-y", "@modelcontextprotocol/server-everything")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dcs, err := direct.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("direct connect: %v", err)
	}
	defer dcs.Close()
	n := 0
	for tool, err := range dcs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if pub := tools["mcp_everything_"+tool.Name]; pub == nil {
			t.Errorf("%s not listed through switchboard", tool.Name)
		} else if !reflect.DeepEqual(pub.InputSchema, tool.InputSchema) {
			t.Errorf("%s schema differs", tool.Name)
		}
	}
	if n == 0 {
		t.Fatal("server-everything listed no tools directly")
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"message": "hello through switchboard"}},
		{"get-sum", map[string]any{"a": 19, "b": 23}},
	} {
		want := mustCall(t, dcs, c.tool, c.args)
		got := mustCall(t, cs, "mcp_everything_"+c.tool, c.args)
		if got.IsError || unwrap(textOf(got)) != textOf(want) {
			t.Errorf("%s: through %q, direct %q", c.tool, textOf(got), textOf(want))
		}
		if !strings.HasPrefix(textOf(got), "<<<EXTERNAL_UNTRUSTED_CONTENT") {
			t.Errorf("%s result not wrapped: %q", c.tool, textOf(got))
		}
	}
}

// startEverythingHTTP runs server-everything's streamable HTTP transport on
// a loopback port and returns its /mcp URL.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	dir := npmDir(t)
	node := node22(t)
	ready := filepath.Join(t.TempDir(), "port")
	loopback, err := filepath.Abs("testdata/loopback.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	p := start(t, dir, []string{"PORT=0", "READY_FILE=" + ready}, node, "--import", loopback, script, "streamableHttp")
	port := strings.TrimSpace(waitFile(t, ready, 60*time.Second, p))
	return "http://127.0.0.1:" + port + "/mcp"
}

// TestEverythingOverStreamableHTTP fronts server-everything's streamable HTTP
// transport.
func TestEverythingOverStreamableHTTP(t *testing.T) {
	url := startEverythingHTTP(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"ev": map[string]any{"type": "http", "url": url},
	}})
	cs := s.client(t, nil)
	testutil.Eventually(t, 30*time.Second, "everything over http", func() bool { return listTools(t, cs)["mcp_ev_echo"] != nil })
	// The TypeScript SDK refuses the server/discover probe with HTTP 400 and
	// an error whose id is null: that is "legacy, initialize now", at once.
	if st := s.serverStatus(t, "ev"); st["protocol"] != "2025-11-25" || st["restarts"].(float64) != 0 {
		t.Errorf("status after the probe: %v", st)
	}
	for _, line := range strings.Split(s.proc.Stderr(), "\n") {
		if strings.Contains(line, "[WARN]") && strings.Contains(line, "upstream.ev") {
			t.Errorf("warning while connecting: %s", line)
		}
	}
	res := mustCall(t, cs, "mcp_ev_get-sum", map[string]any{"a": 1, "b": 2})
	if res.IsError || !strings.Contains(unwrap(textOf(res)), "3") {
		t.Errorf("get-sum over http: %s", js(res))
	}
	direct := connectHTTP(t, url, nil)
	want := mustCall(t, direct, "echo", map[string]any{"message": "x"})
	got := mustCall(t, cs, "mcp_ev_echo", map[string]any{"message": "x"})
	if unwrap(textOf(got)) != textOf(want) {
		t.Errorf("echo over http: through %q, direct %q", textOf(got), textOf(want))
	}
}

// TestInspectorCLI lists and calls through switchboard with the official MCP
// Inspector CLI on Node 22.
func TestInspectorCLI(t *testing.T) {
	node := node22(t)
	dir := npmDir(t)
	cli := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	s := startSwitchboard(t, nil)
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "demo tools", func() bool { return listTools(t, cs)["mcp_notes_add"] != nil })

	inspect := func(args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{cli, "--cli", "http://" + s.addr + "/mcp", "--transport", "http"}, args...)...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "HOME="+cmd.Dir, "MCP_CATALOG_PATH="+filepath.Join(cmd.Dir, "catalog.json"))
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("inspector output is not JSON: %v\n%s", err, out)
		}
		return v
	}
	list := inspect("--method", "tools/list")
	names := map[string]bool{}
	for _, tool := range list["tools"].([]any) {
		names[tool.(map[string]any)["name"].(string)] = true
	}
	for _, want := range []string{"mcp_clock_now", "mcp_clock_unix", "mcp_notes_add", "mcp_notes_get", "mcp_notes_list"} {
		if !names[want] {
			t.Errorf("inspector tools/list lacks %s: %v", want, names)
		}
	}
	res := inspect("--method", "tools/call", "--tool-name", "mcp_notes_add", "--tool-arg", "title=inspected", "text=by the inspector")
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `stored note \"inspected\"`) {
		t.Errorf("inspector tools/call: %s", b)
	}
	// The note landed in the shared upstream session.
	if got := textOf(mustCall(t, cs, "mcp_notes_get", map[string]any{"title": "inspected"})); !strings.Contains(got, "by the inspector") {
		t.Errorf("note from the inspector not found: %q", got)
	}
}

// TestReferenceServersFilesystemAndMemory aggregates the npm reference
// servers @modelcontextprotocol/server-filesystem and -memory (stdio, via
// npx from the npm cache) behind one endpoint and uses a tool of each.
func TestReferenceServersFilesystemAndMemory(t *testing.T) {
	dir := npmDir(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the filesystem server"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-filesystem", root}},
		"memory": map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-memory"},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(root, "memory.jsonl")}},
	}}
	s := startSwitchboardIn(t, t.TempDir(), dir, cfg, npmEnv(t))
	cs := s.client(t, nil)
	testutil.Eventually(t, 60*time.Second, "both reference servers listed", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_fs_read_text_file"] != nil && tools["mcp_memory_create_entities"] != nil
	})
	res := mustCall(t, cs, "mcp_fs_read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt")})
	if res.IsError || !strings.Contains(unwrap(textOf(res)), "hello from the filesystem server") {
		t.Errorf("filesystem read: %s", js(res))
	}
	res = mustCall(t, cs, "mcp_memory_create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "switchboard", "entityType": "project", "observations": []string{"aggregates MCP servers"}},
	}})
	if res.IsError {
		t.Fatalf("memory create_entities: %s", js(res))
	}
	res = mustCall(t, cs, "mcp_memory_read_graph", map[string]any{})
	if res.IsError || !strings.Contains(textOf(res), "aggregates MCP servers") {
		t.Errorf("memory read_graph: %s", js(res))
	}
	// A path outside the allowed directory is the filesystem server's own
	// tool error, passed through.
	res = mustCall(t, cs, "mcp_fs_read_text_file", map[string]any{"path": "/etc/hostname"})
	if !res.IsError {
		t.Errorf("read outside the allowed directory succeeded: %s", js(res))
	}
}
