package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// questionRE finds the number of a question of the fixture's
// elicit_rounds in the message a client is shown.
var questionRE = regexp.MustCompile(`question (\d+) of`)

// TestModernClient runs the go-sdk client as it comes (it probes
// server/discover and speaks 2026-07-28 when offered) against /mcp, an
// agent's endpoint and serve --stdio, in front of a legacy stdio
// upstream: tools, a call with progress and the log messages its _meta
// asked for, resources, prompts, and a list change delivered on
// subscriptions/listen. The upstream's elicitation and sampling requests
// reach a 2026-07-28 client as input_required results, over any number of
// rounds and for concurrent calls.
func TestModernClient(t *testing.T) {
	t.Parallel()
	// f over stdio, h over streamable HTTP: a stdio server's request to the
	// client belongs to a call only while that call is its only one in
	// flight; an HTTP server's comes on its call's stream.
	hURL, _ := startFixtureHTTP(t, "http", "--name", "h")
	cfg := map[string]any{
		"servers": map[string]any{
			"f": map[string]any{"command": fixture, "args": []string{"--name", "f"}},
			"h": map[string]any{"type": "http", "url": hURL},
		},
		"agents": map[string]any{"list": []any{map[string]any{"id": "bot"}}},
	}
	s := startSwitchboard(t, cfg)
	connect := func(t *testing.T, transport mcp.Transport, opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-modern", Version: "1"}, opts).Connect(ctx, transport, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	for _, tc := range []struct {
		name      string
		transport func() mcp.Transport
	}{
		{"mcp", func() mcp.Transport { return &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp"} }},
		{"agent", func() mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/agents/bot/mcp"}
		}},
		{"stdio", func() mcp.Transport {
			cmd := newCmd(switchboard, "serve", "--stdio", "--config", s.config)
			cmd.Stderr = os.Stderr
			return &mcp.CommandTransport{Command: cmd}
		}},
	} {
		// One after the other: a stdio server's log messages and requests
		// belong to a call only while its calls are one session's.
		t.Run(tc.name, func(t *testing.T) {
			changed := make(chan struct{}, 1)
			var progress atomic.Int32
			var logs atomic.Int32
			cs := connect(t, tc.transport(), &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
				LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) { logs.Add(1) },
			})
			if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
				t.Fatalf("negotiated %q, want 2026-07-28", v)
			}
			testutil.Eventually(t, 20*time.Second, "the fixture's tools", func() bool { return listTools(t, cs)["mcp_f_echo"] != nil })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			if got := textOf(mustCall(t, cs, "mcp_f_echo", map[string]any{"text": "modern"})); !strings.Contains(got, "modern") {
				t.Errorf("echo: %s", got)
			}
			params := &mcp.CallToolParams{Name: "mcp_f_chatter", Arguments: map[string]any{"progress": 5, "logs": 5},
				Meta: mcp.Meta{"progressToken": "p1", "io.modelcontextprotocol/logLevel": "info"}}
			if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
				t.Fatalf("chatter: %v %+v", err, res)
			}
			// The go-sdk client hands a 2026-07-28 call's notifications to
			// its handlers after the result (the wire order is checked in
			// TestModernWire).
			testutil.Eventually(t, 10*time.Second, "5 progress notifications and 5 log messages", func() bool {
				return progress.Load() == 5 && logs.Load() == 5
			})

			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://static/hello"})
			if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "hello from f") {
				t.Errorf("read: %v %+v", err, read)
			}
			var we *jsonrpc.Error
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://items/"}); !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("read of a missing resource: %v, want -32602", err)
			}
			prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp_f_greet", Arguments: map[string]string{"name": "Ada"}})
			if err != nil || len(prompt.Messages) == 0 {
				t.Errorf("prompt: %v %+v", err, prompt)
			}

			// A list change reaches the client on its subscriptions/listen
			// stream. The tool is the client's own (set_description changes
			// the shared server, which every subtest sees; any one change
			// after this point will do).
			select {
			case <-changed:
			default:
			}
			mustCall(t, cs, "mcp_f_set_description", map[string]any{"tool": "echo", "description": "changed by " + tc.name})
			select {
			case <-changed:
			case <-time.After(20 * time.Second):
				t.Fatal("no tools/list_changed on the listen stream")
			}
		})
	}

	t.Run("input through rounds", func(t *testing.T) {
		var asked atomic.Int32
		cs := connect(t, &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
			},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				n := questionRE.FindStringSubmatch(req.Params.Message)
				if n == nil {
					return nil, fmt.Errorf("unexpected question %q", req.Params.Message)
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "a" + n[1]}}, nil
			},
		})
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %q, want 2026-07-28", v)
		}
		testutil.Eventually(t, 20*time.Second, "the fixture's tools", func() bool { return listTools(t, cs)["mcp_f_sample"] != nil })
		if got := textOf(mustCall(t, cs, "mcp_f_sample", map[string]any{"prompt": "hi"})); !strings.Contains(got, "sampled") {
			t.Errorf("sample: %s", got)
		}
		if got := textOf(mustCall(t, cs, "mcp_f_elicit_rounds", map[string]any{"rounds": 2})); !strings.Contains(got, "a1,a2") {
			t.Errorf("two rounds: %s", got)
		}
		// Eight calls, each in three rounds, at once: every call gets its
		// own answers.
		testutil.Eventually(t, 20*time.Second, "the HTTP fixture's tools", func() bool { return listTools(t, cs)["mcp_h_elicit_rounds"] != nil })
		concurrentRounds(t, cs, "mcp_h_elicit_rounds", &asked)
	})
}

// TestModernWire checks what a 2026-07-28 client reads on the wire: every
// result typed, lists cacheable (private behind an agent's endpoint), no
// session ID, a header that disagrees with the body refused with -32020,
// and GET refused with 405.
func TestModernWire(t *testing.T) {
	t.Parallel()
	s := startSwitchboard(t, map[string]any{
		"servers": map[string]any{"f": map[string]any{"command": fixture, "args": []string{"--name", "f"}}},
		"agents":  map[string]any{"list": []any{map[string]any{"id": "bot"}}},
	})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(path, method, name, params string) (int, http.Header, string) {
		t.Helper()
		return postRaw(t, s.addr, path, method, name, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+meta+`}}`)
	}
	testutil.Eventually(t, 20*time.Second, "tools listed", func() bool {
		_, _, body := post("/mcp", "tools/list", "", "")
		return strings.Contains(body, "mcp_f_echo")
	})
	for _, tc := range []struct{ path, method, name, params, want string }{
		{"/mcp", "tools/list", "", "", `"ttlMs":0,"cacheScope":"public","tools":[`},
		{"/agents/bot/mcp", "tools/list", "", "", `"ttlMs":0,"cacheScope":"private","tools":[`},
		{"/mcp", "server/discover", "", "", `"supportedVersions":["2026-07-28","2025-11-25"`},
		{"/mcp", "resources/read", "fixture://static/hello", `"uri":"fixture://static/hello",`, `"contents":[`},
		{"/mcp", "tools/call", "mcp_f_echo", `"name":"mcp_f_echo","arguments":{"text":"x"},`, `"content":[`},
		// Text only: the result switchboard writes by hand, typed alike.
		{"/mcp", "tools/call", "mcp_f_add", `"name":"mcp_f_add","arguments":{"a":1,"b":2},`, `"content":[{"type":"text","text":`},
	} {
		status, hdr, body := post(tc.path, tc.method, tc.name, tc.params)
		typed := strings.Contains(body, `"result":{"resultType":"complete",`) && strings.Contains(body, `"io.modelcontextprotocol/serverInfo":{"name":"switchboard"`)
		if status != http.StatusOK || !typed || !strings.Contains(body, tc.want) || hdr.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s %s: %d, session %q, %s; want a complete result naming switchboard, with %s", tc.path, tc.method, status, hdr.Get("Mcp-Session-Id"), body, tc.want)
		}
	}
	// A call's progress and the log messages its _meta asked for come on
	// its stream before its result; without a level, no log messages.
	for _, tc := range []struct {
		level         string
		progress, log int
	}{{`"io.modelcontextprotocol/logLevel":"info",`, 5, 5}, {"", 5, 0}} {
		params := `"name":"mcp_f_chatter","arguments":{"progress":5,"logs":5},`
		withMeta := strings.Replace(meta, `"_meta":{`, `"_meta":{"progressToken":"p",`+tc.level, 1)
		status, _, body := postRaw(t, s.addr, "/mcp", "tools/call", "mcp_f_chatter", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+params+withMeta+`}}`)
		events := strings.Split(strings.TrimSpace(body), "\n\n")
		last := events[len(events)-1]
		if status != http.StatusOK || !strings.Contains(last, `"result":{"resultType":"complete"`) ||
			strings.Count(body, "notifications/progress") != tc.progress || strings.Count(body, "notifications/message") != tc.log {
			t.Errorf("chatter (level %q): %d\n%s\nwant %d progress and %d log messages before the result", tc.level, status, body, tc.progress, tc.log)
		}
	}

	// A call that asks for input answers input_required with switchboard's
	// requestState; a tampered state, or one taken to another endpoint,
	// is refused; the untouched one continues the call.
	call := func(path, extra string) (int, string) {
		status, body, _ := elicitOnce(t, s.addr, path, "mcp_f_elicit_rounds", extra)
		return status, body
	}
	status, body, first := elicitOnce(t, s.addr, "/mcp", "mcp_f_elicit_rounds", "")
	if status != http.StatusOK || first.ResultType != "input_required" || len(first.InputRequests) != 1 {
		t.Fatalf("elicit_rounds: %d %s, want input_required", status, body)
	}
	var key string
	for k := range first.InputRequests {
		key = k
	}
	answer := `"inputResponses":{"` + key + `":{"action":"accept","content":{"answer":"yes"}}},`
	state := first.RequestState
	tampered := state[:len(state)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(state, "AA")]
	for _, tc := range []struct{ path, state string }{{"/mcp", tampered}, {"/mcp", "x" + state}, {"/agents/bot/mcp", state}} {
		if status, body := call(tc.path, answer+`"requestState":"`+tc.state+`",`); status != http.StatusBadRequest || !strings.Contains(body, "-32602") {
			t.Errorf("state %q at %s: %d %s, want 400 and -32602", tc.state, tc.path, status, body)
		}
	}
	if status, body := call("/mcp", answer+`"requestState":"`+state+`",`); status != http.StatusOK || !strings.Contains(body, `"resultType":"complete"`) || !strings.Contains(body, "yes") {
		t.Errorf("the untouched state: %d %s, want the call's result", status, body)
	}

	status, _, body = post("/mcp", "tools/call", "mcp_f_add", `"name":"mcp_f_echo","arguments":{"text":"x"},`)
	var msg struct {
		Error struct{ Code int } `json:"error"`
	}
	if status != http.StatusBadRequest || json.Unmarshal([]byte(body), &msg) != nil || msg.Error.Code != -32020 {
		t.Errorf("Mcp-Name mismatch: %d %s, want 400 and -32020", status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.addr+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET at 2026-07-28: %d, want 405", resp.StatusCode)
	}
}

// postRaw sends one 2026-07-28 request with its headers and returns the
// response's status, headers and body.
func postRaw(t *testing.T, addr, path, method, name, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// concurrentRounds makes eight calls of tool (the fixture's elicit_rounds)
// at once, each in three rounds, and checks that every call got its own
// answers and that the client was asked 24 times in all.
func concurrentRounds(t *testing.T, cs *mcp.ClientSession, tool string, asked *atomic.Int32) {
	t.Helper()
	asked.Store(0)
	errs := make(chan string, 8)
	for range 8 {
		go func() {
			res, err := callTool(t, cs, tool, map[string]any{"rounds": 3})
			switch {
			case err != nil:
				errs <- err.Error()
			case !strings.Contains(textOf(res), "a1,a2,a3"):
				errs <- textOf(res)
			default:
				errs <- ""
			}
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Errorf("concurrent rounds: %s", e)
		}
	}
	if n := asked.Load(); n != 24 {
		t.Errorf("the client was asked %d times, want 24", n)
	}
}

// elicitMeta is the _meta of a 2026-07-28 request from a client that
// declares elicitation.
const elicitMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// inputRound is a 2026-07-28 result as its client reads it.
type inputRound struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
}

// elicitOnce calls tool (the fixture's elicit_rounds, for one round) at
// addr and path as a client declaring elicitation, with extra params
// before _meta. It returns the status, the body and the result read from
// it (zero when there is none).
func elicitOnce(t *testing.T, addr, path, tool, extra string) (int, string, inputRound) {
	t.Helper()
	status, _, body := postRaw(t, addr, path, "tools/call", tool,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"rounds":1},`+extra+elicitMeta+`}}`)
	var m struct {
		Result inputRound `json:"result"`
	}
	data, _ := strings.CutPrefix(strings.TrimSpace(body), "event: message\ndata: ")
	_ = json.Unmarshal([]byte(data), &m)
	return status, body, m.Result
}

// TestShutdownEndsCallsWaitingForInput: a 2026-07-28 call answered with
// input_required runs on, on its POST's goroutine, until the client's
// retry. Once shutdown refuses new requests no retry can come, so the call
// ends at once instead of holding the drain for all of shutdownTimeout.
func TestShutdownEndsCallsWaitingForInput(t *testing.T) {
	t.Parallel()
	const shutdown = 30 * time.Second
	s := startSwitchboard(t, map[string]any{
		"shutdownTimeout": shutdown.Milliseconds(),
		"servers":         map[string]any{"f": map[string]any{"command": fixture, "args": []string{"--name", "f"}}},
	})
	testutil.Eventually(t, 20*time.Second, "the fixture's tools", func() bool {
		_, _, body := postRaw(t, s.addr, "/mcp", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+elicitMeta+`}}`)
		return strings.Contains(body, "mcp_f_elicit_rounds")
	})
	status, body, first := elicitOnce(t, s.addr, "/mcp", "mcp_f_elicit_rounds", "")
	if status != http.StatusOK || first.ResultType != "input_required" {
		t.Fatalf("elicit_rounds: %d %s, want input_required", status, body)
	}
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t, shutdown+10*time.Second); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took := time.Since(start); took > shutdown/2 {
		t.Errorf("shutdown took %s with a call waiting for input; want it ended at once, not held to shutdownTimeout (%s)", took, shutdown)
	}
}
