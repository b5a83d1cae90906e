package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests in this file drive the core of the pipeline end to end, in
// process: a whole proxy (New, Serve) between a real go-sdk client, on the
// stdio downstream (in-process pipes) or on /mcp over 127.0.0.1, and a real
// upstream child (this test binary as the echo server of bench_test.go,
// with the tools of addTestTools).

// testToolsEnv makes the echo child offer the tools of addTestTools too.
const testToolsEnv = "SWITCHBOARD_TEST_TOOLS"

// failSecretEnv is the child's variable whose value tool "fail" puts in
// its error. The config sets it from a secret:// reference.
const failSecretEnv = "SWITCHBOARD_TEST_FAIL_SECRET"

// untrustedMarker opens every piece of content wrapped as untrusted.
const untrustedMarker = "<<<EXTERNAL_UNTRUSTED_CONTENT"

// addTestTools adds the tools the pipeline tests call to the echo server:
//
//   - "calls" answers how many tools/call requests the child received
//     before it (so a test can tell whether a call reached the upstream);
//   - "fail" fails with a Go error that holds the value of failSecretEnv;
//     the SDK answers it with a JSON-RPC error;
//   - "chatter" sends n progress notifications (under the request's
//     progress token, if any) and n log messages, each naming tag, then
//     answers "done <tag>";
//   - "sleep" waits ms milliseconds or until the call is cancelled.
func addTestTools(s *mcp.Server) {
	var calls atomic.Int64
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				calls.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "calls", Description: "Count tools/call requests.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprintf("calls=%d;", calls.Load()-1)), nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Fail with a JSON-RPC error.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("fail: upstream credential %s was rejected", os.Getenv(failSecretEnv))
		})
	s.AddTool(&mcp.Tool{
		Name: "chatter", Description: "Report progress and log, then answer.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string"},"n":{"type":"integer","minimum":0}},"required":["tag","n"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Tag string `json:"tag"`
			N   int    `json:"n"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		tok := req.Params.GetProgressToken()
		for i := range in.N {
			if tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: float64(i + 1), Total: float64(in.N),
					Message: fmt.Sprintf("%s progress %d", in.Tag, i),
				}); err != nil {
					return nil, err
				}
			}
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{
				Level: "info", Logger: "chatter", Data: fmt.Sprintf("%s log %d", in.Tag, i),
			}); err != nil {
				return nil, err
			}
		}
		return text("done " + in.Tag), nil
	})
	s.AddTool(&mcp.Tool{
		Name: "sleep", Description: "Sleep, then answer.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			MS int `json:"ms"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		select {
		case <-time.After(time.Duration(in.MS) * time.Millisecond):
			return text("slept"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// pipelineConfig is a config with one echo child ("echo") that offers the
// test tools. server adds to (or replaces) fields of the server entry, env
// to its environment, top to the top level.
func pipelineConfig(server, env, top map[string]any) string {
	// Under -race the child would sleep 1 s at exit (GORACE's default
	// atexit_sleep_ms), which every test's shutdown would wait for.
	e := map[string]any{benchEchoEnv: "0", testToolsEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	maps.Copy(e, env)
	srv := map[string]any{"command": os.Args[0], "env": e}
	maps.Copy(srv, server)
	c := map[string]any{"mcpServers": map[string]any{"echo": srv}}
	maps.Copy(c, top)
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// testProxy is a running proxy.
type testProxy struct {
	p           *Proxy
	path        string // the config file
	addr, admin string // HTTP only: the bound addresses
	stdio       mcp.Transport
	wire        *wireLog // every message the clients read, in the order read
}

// startProxy writes config to a file and serves it with a proxy until the
// test ends; down is "stdio" (in-process pipes) or "http". The listen
// addresses come from the config (or, if it has none, 127.0.0.1:0).
func startProxy(t testing.TB, config, down string) *testProxy {
	t.Helper()
	return startProxyWith(t, config, down, nil)
}

// startProxyWith is startProxy with the options changed by set.
func startProxyWith(t testing.TB, config, down string, set func(*Options)) *testProxy {
	t.Helper()
	dir := t.TempDir()
	tp := &testProxy{path: filepath.Join(dir, "switchboard.json"), wire: &wireLog{}}
	if err := os.WriteFile(tp.path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logw := &tlogWriter{t: t}
	o := Options{ConfigPath: tp.path, Stderr: logw, Getenv: func(string) string { return "" }}
	if down == "http" {
		if !strings.Contains(config, `"listen"`) {
			o.Listen, o.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
		}
		o.ReadyFile = filepath.Join(dir, "ready")
	} else {
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		o.Stdio, o.Stdin, o.Stdout = true, sr, sw
		tp.stdio = &mcp.IOTransport{Reader: &tapReader{r: cr, log: tp.wire}, Writer: cw}
		t.Cleanup(func() { cr.Close(); cw.Close() })
	}
	if set != nil {
		set(&o)
	}
	p, c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	tp.p = p
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, c) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("proxy did not stop within 10 s")
		}
		logw.stop()
	})
	if down == "http" {
		tp.addr, tp.admin = waitReadyAddrs(t, o.ReadyFile, done)
	}
	return tp
}

// tlogWriter sends the proxy's log to t.Log, so it shows only when a test
// fails (STYLE §10.10). After stop it drops what it gets: t.Log panics once
// the test has ended.
type tlogWriter struct {
	t       testing.TB
	mu      sync.Mutex
	stopped bool
}

func (w *tlogWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimRight(string(b), "\n"))
	}
	return len(b), nil
}

func (w *tlogWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// waitReadyAddrs reads both addresses from the ready file.
func waitReadyAddrs(t testing.TB, path string, done <-chan error) (addr, admin string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil {
			if f := strings.Fields(string(data)); len(f) == 2 {
				return f[0], f[1]
			}
		}
		select {
		case err := <-done:
			t.Fatalf("proxy stopped before it was ready: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("no ready file after 10 s")
	return "", ""
}

// connect opens a client session: on the stdio pipes (once), or on /mcp
// with header set on every request. Everything the session reads is
// recorded in tp.wire. The session closes when the test ends.
func (tp *testProxy) connect(t testing.TB, opts *mcp.ClientOptions, header http.Header) *mcp.ClientSession {
	t.Helper()
	ct := tp.stdio
	if ct == nil {
		rt := &tapTransport{base: http.DefaultTransport, header: header, log: tp.wire}
		ct = &mcp.StreamableClientTransport{Endpoint: "http://" + tp.addr + "/mcp", HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}
	} else {
		tp.stdio = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pipeline-test", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// waitTool waits until the session lists tool (the child starts in the
// background) and returns the listed tools.
func waitTool(t testing.TB, cs *mcp.ClientSession, tool string) []*mcp.Tool {
	t.Helper()
	var tools []*mcp.Tool
	testutil.Eventually(t, 10*time.Second, tool+" listed", func() bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tools = res.Tools
		return slices.ContainsFunc(tools, func(x *mcp.Tool) bool { return x.Name == tool })
	})
	return tools
}

// call calls a tool with a 10 s bound.
func call(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// resultText is the text of a result's only content.
func resultText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d contents, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// rpcError is err's JSON-RPC error; the test fails if there is none.
func rpcError(t testing.TB, err error) *jsonrpc.Error {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
	}
	return we
}

// upstreamCalls asks the child how many tools/call requests reached it.
func upstreamCalls(t testing.TB, cs *mcp.ClientSession) int {
	t.Helper()
	res, err := call(cs, "mcp_echo_calls", nil)
	if err != nil {
		t.Fatal(err)
	}
	text := resultText(t, res)
	i := strings.Index(text, "calls=")
	var n int
	if i < 0 {
		t.Fatalf("calls: unexpected answer %q", text)
	}
	if _, err := fmt.Sscanf(text[i:], "calls=%d;", &n); err != nil {
		t.Fatalf("calls: unexpected answer %q: %v", text, err)
	}
	return n
}

// downs are the downstream transports every pipeline test runs on.
var downs = []string{"stdio", "http"}

// TestPipelineToolsCall pins the tools/call path on both downstreams: a
// result is wrapped as untrusted content; arguments that break the tool's
// input schema get a tool error and never reach the upstream; a tool hidden by
// policy and a missing tool get the same error; and every listed tool is
// routed to the upstream.
func TestPipelineToolsCall(t *testing.T) {
	for _, down := range downs {
		t.Run(down, func(t *testing.T) {
			tp := startProxy(t, pipelineConfig(nil, nil, map[string]any{
				"sanitize": map[string]any{"wrapResults": true},
				"tools":    map[string]any{"deny": []string{"mcp_echo_sleep"}},
			}), down)
			cs := tp.connect(t, nil, nil)
			listed := waitTool(t, cs, "mcp_echo_echo")

			res, err := call(cs, "mcp_echo_echo", map[string]any{"text": "hello pipeline"})
			if err != nil {
				t.Fatal(err)
			}
			if text := resultText(t, res); res.IsError || !strings.HasPrefix(text, untrustedMarker) || !strings.Contains(text, "hello pipeline") {
				t.Errorf("echo result (isError %v) %q: want the text wrapped as untrusted", res.IsError, text)
			}

			before := upstreamCalls(t, cs)
			for what, c := range map[string]struct {
				tool string
				args map[string]any
			}{
				"schema mismatch":           {"mcp_echo_echo", map[string]any{"text": 42}},
				"missing required argument": {"mcp_echo_chatter", map[string]any{"tag": "x"}}, // n is required
			} {
				res, err := call(cs, c.tool, c.args)
				if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "invalid arguments") {
					t.Errorf("%s: %v %+v, want a tool error saying the arguments are invalid", what, err, res)
				}
			}
			if after := upstreamCalls(t, cs); after != before+1 { // +1: the "calls" call itself
				t.Errorf("upstream saw %d tools/call between the counts, want 0: invalid arguments reached it", after-before-1)
			}

			// Hidden by policy or missing: the same error, name aside.
			for _, x := range listed {
				if x.Name == "mcp_echo_sleep" {
					t.Errorf("denied tool %s is listed", x.Name)
				}
			}
			_, errDenied := call(cs, "mcp_echo_sleep", map[string]any{"ms": 0})
			_, errMissing := call(cs, "mcp_echo_nosuch", map[string]any{"ms": 0})
			denied, missing := rpcError(t, errDenied), rpcError(t, errMissing)
			if denied.Code != jsonrpc.CodeInvalidParams || denied.Code != missing.Code ||
				strings.ReplaceAll(denied.Message, "mcp_echo_sleep", "NAME") != strings.ReplaceAll(missing.Message, "mcp_echo_nosuch", "NAME") ||
				string(denied.Data) != string(missing.Data) {
				t.Errorf("denied and missing tools are distinguishable:\n denied:  %d %q %s\n missing: %d %q %s",
					denied.Code, denied.Message, denied.Data, missing.Code, missing.Message, missing.Data)
			}
			if after := upstreamCalls(t, cs); after != before+2 {
				t.Errorf("a denied or missing tool reached the upstream (%d calls)", after-before-2)
			}

			// Every listed tool reaches the upstream.
			args := map[string]map[string]any{
				"mcp_echo_echo":    {"text": "x"},
				"mcp_echo_chatter": {"tag": "x", "n": 0},
			}
			before = upstreamCalls(t, cs)
			called := 0
			for _, x := range listed {
				_, err := call(cs, x.Name, args[x.Name])
				var we *jsonrpc.Error
				if errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams {
					t.Errorf("listed tool %s: %v", x.Name, err)
				}
				called++
			}
			if after := upstreamCalls(t, cs); after != before+1+called {
				t.Errorf("%d listed tools called, %d reached the upstream", called, after-before-1)
			}
		})
	}
}

// TestPipelineErrorKeepsSecret pins the trust boundary on JSON-RPC errors:
// an upstream's JSON-RPC error to tools/call that holds a resolved secret
// reaches the client as a tool error (isError), redacted, and wrapped as
// untrusted content when wrapping is on.
func TestPipelineErrorKeepsSecret(t *testing.T) {
	const secret = "pipeline-secret-d41d8cd98f00b204"
	t.Setenv("SWITCHBOARD_TEST_PIPELINE_SECRET", secret)
	for _, down := range downs {
		for _, wrap := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/wrap=%v", down, wrap), func(t *testing.T) {
				tp := startProxy(t, pipelineConfig(nil,
					map[string]any{failSecretEnv: "secret://env/SWITCHBOARD_TEST_PIPELINE_SECRET"},
					map[string]any{"sanitize": map[string]any{"wrapResults": wrap}}), down)
				cs := tp.connect(t, nil, nil)
				waitTool(t, cs, "mcp_echo_fail")
				res, err := call(cs, "mcp_echo_fail", nil)
				if err != nil || !res.IsError {
					t.Fatalf("upstream error: %v %+v, want a tool error", err, res)
				}
				text := resultText(t, res)
				if strings.Contains(text, secret) {
					t.Errorf("the client got the secret: %q", text)
				}
				// The redaction marker proves the child got the resolved
				// secret and the boundary took it out.
				if !strings.Contains(text, "credential [REDACTED] was rejected") {
					t.Errorf("error %q: want the upstream's message, redacted", text)
				}
				if got := strings.Contains(text, untrustedMarker); got != wrap {
					t.Errorf("error %q: wrapped %v, want %v", text, got, wrap)
				}
			})
		}
	}
}

// wireLog records every message the test's clients read, in the order
// their transports read them.
type wireLog struct {
	mu   sync.Mutex
	msgs []jsonrpc.Message
}

func (w *wireLog) add(data []byte) {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return // a batch, or a line that is not a message: not ours
	}
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
}

func (w *wireLog) snapshot() []jsonrpc.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]jsonrpc.Message(nil), w.msgs...)
}

// tapReader records each line of a stdio stream before the transport
// reading it can see it.
type tapReader struct {
	r   io.ReadCloser
	log *wireLog
	buf []byte
}

func (t *tapReader) Close() error { return t.r.Close() }

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.log.add(t.buf[:i])
		t.buf = t.buf[i+1:]
	}
	return n, err
}

// tapTransport adds header to every request and records every message of
// every response body (JSON or an event stream) before the client reading
// the body can see it.
type tapTransport struct {
	base   http.RoundTripper
	header http.Header
	log    *wireLog
}

func (t *tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.header {
			r.Header[k] = v
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = &sseTap{ReadCloser: resp.Body, log: t.log}
	case strings.HasPrefix(ct, "application/json"):
		resp.Body = &jsonTap{ReadCloser: resp.Body, log: t.log}
	}
	return resp, nil
}

// sseTap records each event's data as the event ends (at its blank line),
// which is also when a client can first act on it.
type sseTap struct {
	io.ReadCloser
	log  *wireLog
	line []byte
	data []byte
}

func (s *sseTap) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	for _, b := range p[:n] {
		if b != '\n' {
			s.line = append(s.line, b)
			continue
		}
		line := strings.TrimSuffix(string(s.line), "\r")
		s.line = s.line[:0]
		switch {
		case line == "":
			if len(s.data) > 0 {
				s.log.add(s.data)
				s.data = nil
			}
		case strings.HasPrefix(line, "data:"):
			if len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	return n, err
}

// jsonTap records a JSON body once it is read to the end.
type jsonTap struct {
	io.ReadCloser
	log  *wireLog
	body []byte
}

func (j *jsonTap) Read(p []byte) (int, error) {
	n, err := j.ReadCloser.Read(p)
	j.body = append(j.body, p[:n]...)
	if err == io.EOF {
		j.log.add(j.body)
	}
	return n, err
}

// chatterClient is a client whose handlers record every progress
// notification and log message it is handed, in order.
type chatterClient struct {
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	logs     []string
}

func (c *chatterClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, r.Params)
			c.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			data, ok := r.Params.Data.(string)
			if !ok {
				b, _ := json.Marshal(r.Params.Data)
				data = string(b)
			}
			c.mu.Lock()
			c.logs = append(c.logs, data)
			c.mu.Unlock()
		},
	}
}

// counts is how many progress notifications and log messages arrived.
func (c *chatterClient) counts() (progress, logs int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.progress), len(c.logs)
}

// waitCounts waits until at least the given counts arrived.
func (c *chatterClient) waitCounts(t testing.TB, progress, logs int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, l := c.counts()
		if p >= progress && l >= logs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d progress notifications and %d log messages, want %d and %d", p, l, progress, logs)
		}
		time.Sleep(time.Millisecond)
	}
}

// chatter calls the chatter tool with tag as both the progress token and
// the text of every notification.
func chatter(cs *mcp.ClientSession, tag string, n int) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: "mcp_echo_chatter", Arguments: map[string]any{"tag": tag, "n": n}}
	params.SetProgressToken(tag)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cs.CallTool(ctx, params)
}

// setDebug asks for every log message on the session.
func setDebug(t testing.TB, cs *mcp.ClientSession) {
	t.Helper()
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
}

// chatterTag is the tag of call i of client name: no tag is a prefix of
// another.
func chatterTag(name string, i int) string { return fmt.Sprintf("%s-%03d-", name, i) }

// TestPipelineNotificationOrder pins ordering by construction (DESIGN §12):
// on both downstreams, over 100 sequential calls, every progress
// notification and log message the upstream sent during a call reaches the
// client before the call's answer.
//
// The check is on the order the client's transport reads the messages
// (tapReader, sseTap), not on handler counts at the moment CallTool
// returns: the go-sdk client retires a response on its read loop, but runs
// notification handlers on another goroutine (jsonrpc2's handleAsync queue),
// so a handler may still be running for a notification that did arrive
// before the answer. The read order is what the proxy controls; the
// handlers are then checked to have received everything, each once, in
// that order.
func TestPipelineNotificationOrder(t *testing.T) {
	const calls, n = 100, 3
	for _, down := range downs {
		t.Run(down, func(t *testing.T) {
			tp := startProxy(t, pipelineConfig(nil, nil, map[string]any{"sanitize": map[string]any{"wrapResults": true}}), down)
			cc := &chatterClient{}
			cs := tp.connect(t, cc.options(), nil)
			waitTool(t, cs, "mcp_echo_chatter")
			setDebug(t, cs)
			start := len(tp.wire.snapshot())
			for i := range calls {
				tag := chatterTag("c", i)
				res, err := chatter(cs, tag, n)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if text := resultText(t, res); !strings.Contains(text, "done "+tag) {
					t.Fatalf("call %d answered %q", i, text)
				}
			}

			// On the wire: each call's 2n notifications, then its answer.
			msgs := tp.wire.snapshot()[start:]
			for i := range calls {
				tag := chatterTag("c", i)
				answer, notes, late := -1, 0, 0
				for j, m := range msgs {
					raw := messageText(m)
					if !strings.Contains(raw, tag) {
						continue
					}
					if _, ok := m.(*jsonrpc.Response); ok {
						answer = j
						continue
					}
					notes++
					if answer >= 0 {
						late++
					}
				}
				if answer < 0 || notes != 2*n || late > 0 {
					t.Errorf("call %d: answer at %d, %d notifications (want %d), %d of them after the answer", i, answer, notes, 2*n, late)
				}
			}

			// In the handlers: everything, once, in call order, with the
			// client's own token.
			cc.waitCounts(t, calls*n, calls*n)
			cc.mu.Lock()
			defer cc.mu.Unlock()
			if len(cc.progress) != calls*n || len(cc.logs) != calls*n {
				t.Fatalf("%d progress notifications and %d log messages, want %d each", len(cc.progress), len(cc.logs), calls*n)
			}
			for k, p := range cc.progress {
				if want := chatterTag("c", k/n); p.ProgressToken != want || !strings.Contains(p.Message, want) || p.Progress != float64(k%n+1) {
					t.Fatalf("progress notification %d: token %v, progress %v, message %q; want token %s, progress %d", k, p.ProgressToken, p.Progress, p.Message, want, k%n+1)
				}
			}
			for k, l := range cc.logs {
				if want := fmt.Sprintf("%s log %d", chatterTag("c", k/n), k%n); !strings.Contains(l, want) {
					t.Fatalf("log message %d is %s, want one naming %q", k, l, want)
				}
				if !strings.Contains(l, untrustedMarker) {
					t.Errorf("log message %d is not wrapped as untrusted: %s", k, l)
				}
			}
		})
	}
}

// messageText is a message's params or result as text.
func messageText(m jsonrpc.Message) string {
	switch m := m.(type) {
	case *jsonrpc.Request:
		return string(m.Params)
	case *jsonrpc.Response:
		return string(m.Result)
	}
	return ""
}

// TestPipelineSessionIsolation pins isolation on /mcp: two clients call
// the chatter tool of one shared upstream at the same time, and each sees
// only its own progress and log messages.
//
// Progress is routed by the token the proxy minted per call, so each
// client gets all of its own. A log message has no token: the stdio
// upstream cannot say which call wrote it while calls of two sessions are
// in flight, and the proxy then delivers it to neither (upstream
// client.logMessage). So a client may get fewer log messages than its
// calls wrote, but never one of the other's.
func TestPipelineSessionIsolation(t *testing.T) {
	const calls, n = 20, 3
	tp := startProxy(t, pipelineConfig(nil, nil, nil), "http")
	clients := map[string]*chatterClient{"a": {}, "b": {}}
	sessions := map[string]*mcp.ClientSession{}
	for name, cc := range clients {
		sessions[name] = tp.connect(t, cc.options(), nil)
		waitTool(t, sessions[name], "mcp_echo_chatter")
		setDebug(t, sessions[name])
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*calls)
	for name, cs := range sessions {
		wg.Go(func() {
			for i := range calls {
				tag := chatterTag(name, i)
				res, err := chatter(cs, tag, n)
				if err == nil && (len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "done "+tag)) {
					err = fmt.Errorf("answer %+v", res.Content)
				}
				if err != nil {
					errs <- fmt.Errorf("client %s, call %d: %w", name, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for name, cc := range clients {
		other := "b-"
		if name == "b" {
			other = "a-"
		}
		cc.waitCounts(t, calls*n, 0)
		cc.mu.Lock()
		seen := map[string]int{}
		for _, p := range cc.progress {
			tok, _ := p.ProgressToken.(string)
			if !strings.HasPrefix(tok, name+"-") || strings.Contains(p.Message, other) {
				t.Errorf("client %s got progress of another: token %v, message %q", name, p.ProgressToken, p.Message)
			}
			seen[tok]++
		}
		for i := range calls {
			if got := seen[chatterTag(name, i)]; got != n {
				t.Errorf("client %s, call %d: %d progress notifications, want %d", name, i, got, n)
			}
		}
		for _, l := range cc.logs {
			if !strings.Contains(l, name+"-") || strings.Contains(l, other) {
				t.Errorf("client %s got a log message not its own: %s", name, l)
			}
		}
		t.Logf("client %s: %d progress notifications, %d of its %d log messages", name, len(cc.progress), len(cc.logs), calls*n)
		cc.mu.Unlock()
	}
}

// TestPipelineProgressTokenVerbatim: a progress token goes back on the
// call's notifications exactly as the client wrote it, on both
// downstreams; an integer over 2^53 would not survive a float64.
func TestPipelineProgressTokenVerbatim(t *testing.T) {
	const token = "9007199254740993" // 2^53 + 1
	for _, down := range downs {
		t.Run(down, func(t *testing.T) {
			tp := startProxy(t, pipelineConfig(nil, nil, nil), down)
			cs := tp.connect(t, nil, nil)
			waitTool(t, cs, "mcp_echo_chatter")
			start := len(tp.wire.snapshot())
			params := &mcp.CallToolParams{Name: "mcp_echo_chatter", Arguments: map[string]any{"tag": "big", "n": 1}}
			params.SetProgressToken(int64(9007199254740993))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := cs.CallTool(ctx, params); err != nil {
				t.Fatal(err)
			}
			var seen []string
			for _, m := range tp.wire.snapshot()[start:] {
				if r, ok := m.(*jsonrpc.Request); ok && r.Method == "notifications/progress" {
					seen = append(seen, string(r.Params))
				}
			}
			if len(seen) != 1 || !strings.Contains(seen[0], `"progressToken":`+token) {
				t.Errorf("progress notifications %q, want one with token %s", seen, token)
			}
		})
	}
}
