package streamhttp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServer is an MCP server with the tools the tests call: echo, one
// that reports progress before answering, one that asks the client for its
// roots in the middle of the call, and one that waits for cancellation.
// direct answers the same tools the way switchboard's views do, counting
// the calls it answers.
type testServer struct {
	srv    *mcp.Server
	tools  map[string]mcp.ToolHandler
	direct atomic.Int32
}

func newTestServer() *testServer {
	ts := &testServer{srv: mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)}
	textResult := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	ts.tools = map[string]mcp.ToolHandler{
		"echo": func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return textResult(in.Text), nil
		},
		"progress": func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range 3 {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3,
				}); err != nil {
					return nil, err
				}
			}
			return textResult("done"), nil
		},
		"roots": func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, err
			}
			var names []string
			for _, r := range res.Roots {
				names = append(names, r.URI)
			}
			return textResult(strings.Join(names, ",")), nil
		},
		"wait": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				return textResult("cancelled"), nil
			case <-time.After(3 * time.Second):
				return textResult("not cancelled"), nil
			}
		},
		"empty": func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		},
	}
	for name, h := range ts.tools {
		ts.srv.AddTool(&mcp.Tool{Name: name, InputSchema: &jsonschema.Schema{Type: "object"}}, h)
	}
	ts.srv.AddReceivingMiddleware(Related)
	return ts
}

// directHandler answers tools/call as switchboard's views do: the same
// receiving middleware around the tool's handler.
func (ts *testServer) directHandler(*mcp.Server) mcp.MethodHandler {
	return Related(func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		ts.direct.Add(1)
		ct := req.(*mcp.CallToolRequest)
		h, ok := ts.tools[ct.Params.Name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", ct.Params.Name)}
		}
		return h(ctx, ct)
	})
}

// modes runs a test with tools/call answered by the server and by the
// direct path.
func modes(t *testing.T, f func(t *testing.T, ts *testServer, direct func(*mcp.Server) mcp.MethodHandler)) {
	for _, mode := range []string{"server", "direct"} {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer()
			var direct func(*mcp.Server) mcp.MethodHandler
			if mode == "direct" {
				direct = ts.directHandler
				t.Cleanup(func() {
					if ts.direct.Load() == 0 {
						t.Error("no call took the direct path")
					}
				})
			}
			f(t, ts, direct)
		})
	}
}

// checkGoroutines fails the test if it leaves goroutines behind.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func serve(t *testing.T, srv *mcp.Server, direct func(*mcp.Server) mcp.MethodHandler) (*Handler, *httptest.Server) {
	t.Helper()
	h := New(func(*http.Request) *mcp.Server { return srv }, direct, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		ts.CloseClientConnections()
		ts.Close()
	})
	return h, ts
}

func connect(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts)
	c.AddRoots(&mcp.Root{URI: "file:///a"}, &mcp.Root{URI: "file:///b"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result: %+v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestClientRoundTrip runs the go-sdk's own client against the handler:
// its discovery and fallback to a stateful version, calls, a call's progress
// on the call's stream, a server request inside a call, and a notification
// with no call on the standalone stream.
func TestClientRoundTrip(t *testing.T) { modes(t, testClientRoundTrip) }

func testClientRoundTrip(t *testing.T, fx *testServer, direct func(*mcp.Server) mcp.MethodHandler) {
	checkGoroutines(t)
	srv := fx.srv
	h, ts := serve(t, srv, direct)

	var progress atomic.Int32
	changed := make(chan struct{}, 1)
	cs := connect(t, ts.URL, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	if got := cs.InitializeResult().ProtocolVersion; got >= v20260728 {
		t.Fatalf("negotiated %s on a stateful server", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "hi" {
		t.Fatalf("echo: %q", got)
	}

	p := &mcp.CallToolParams{Name: "progress"}
	p.SetProgressToken("tok")
	if res, err = cs.CallTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "done" {
		t.Fatalf("progress result %q", got)
	}
	// The go-sdk client may hand the answer to the caller before its
	// notification handler ran; TestRequestChecks checks the order on the
	// wire.
	waitFor(t, func() bool { return progress.Load() == 3 })

	if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots"}); err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "file:///a,file:///b" {
		t.Fatalf("roots from inside a call: %q", got)
	}

	// Not about a call: goes to the standalone GET stream.
	mcp.AddTool(srv, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("tools/list_changed never reached the client")
	}

	if h.Sessions() != 1 {
		t.Fatalf("sessions: %d", h.Sessions())
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	// The client's DELETE ends the session on the server.
	waitFor(t, func() bool { return h.Sessions() == 0 })
}

// Sessions is the number of open sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// post sends one raw POST.
func post(t *testing.T, url, session, body string, hdr map[string]string) *http.Response {
	t.Helper()
	return send(t, http.MethodPost, url, session, body, hdr)
}

// send sends one raw request with a POST's headers, changed by hdr (an
// empty value removes a header; "Host" sets the request's host).
func send(t *testing.T, method, url, session, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(sessionIDHeader, session)
	}
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initialize opens a session by hand and returns its ID.
func initialize(t *testing.T, url string) string {
	t.Helper()
	resp := post(t, url, "", initBody, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s", resp.Status)
	}
	id := resp.Header.Get(sessionIDHeader)
	if id == "" {
		t.Fatal("no session ID")
	}
	events(t, resp)
	r := post(t, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{protocolVersionHeader: "2025-11-25"})
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %s", r.Status)
	}
	return id
}

// events reads an SSE response to its end and returns the data of each
// message event.
func events(t *testing.T, resp *http.Response) []string {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if event != "message" {
				t.Fatalf("data in event %q", event)
			}
			out = append(out, strings.TrimPrefix(line, "data: "))
		}
	}
	return out
}

func status(t *testing.T, resp *http.Response, want int) string {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("status %s, want %d: %s", resp.Status, want, body)
	}
	return string(body)
}

// TestRequestChecks: what the handler refuses, and how.
func TestRequestChecks(t *testing.T) { modes(t, testRequestChecks) }

func testRequestChecks(t *testing.T, fx *testServer, direct func(*mcp.Server) mcp.MethodHandler) {
	checkGoroutines(t)
	h, ts := serve(t, fx.srv, direct)
	id := initialize(t, ts.URL)
	v := map[string]string{protocolVersionHeader: "2025-11-25"}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`

	status(t, post(t, ts.URL, id, call, map[string]string{"Content-Type": "text/plain"}), http.StatusUnsupportedMediaType)
	status(t, post(t, ts.URL, id, call, map[string]string{"Accept": "application/json"}), http.StatusBadRequest)
	status(t, post(t, ts.URL, id, call, map[string]string{lastEventIDHeader: "x_1"}), http.StatusBadRequest)
	status(t, post(t, ts.URL, "nope", call, v), http.StatusNotFound)
	status(t, post(t, ts.URL, id, "  ", v), http.StatusBadRequest)
	status(t, post(t, ts.URL, id, call, map[string]string{protocolVersionHeader: "1999-01-01"}), http.StatusBadRequest)

	// Not JSON-RPC: a JSON-RPC parse error, and the session goes on.
	body := status(t, post(t, ts.URL, id, `{"jsonrpc":"2.0",`, v), http.StatusBadRequest)
	var e struct {
		ID    any `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != -32700 || e.ID != nil {
		t.Fatalf("malformed body answered with %q", body)
	}

	// Batches: refused from 2025-06-18, answered before.
	batch := `[` + call + `,{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"y"}}}]`
	status(t, post(t, ts.URL, id, batch, v), http.StatusBadRequest)
	got := events(t, post(t, ts.URL, id, batch, map[string]string{protocolVersionHeader: "2025-03-26"}))
	if len(got) != 2 || !strings.Contains(strings.Join(got, ""), `"text":"x"`) || !strings.Contains(strings.Join(got, ""), `"text":"y"`) {
		t.Fatalf("batch answers: %q", got)
	}
	// One ID twice in a batch.
	status(t, post(t, ts.URL, id, `[`+call+`,`+call+`]`, map[string]string{protocolVersionHeader: "2025-03-26"}), http.StatusBadRequest)

	// A call answered on its stream.
	got = events(t, post(t, ts.URL, id, call, v))
	if len(got) != 1 || !strings.Contains(got[0], `"id":7`) || !strings.Contains(got[0], `"text":"x"`) {
		t.Fatalf("answer: %q", got)
	}
	// A call's notifications go on its own stream, before its answer.
	got = events(t, post(t, ts.URL, id, `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok"}}}`, v))
	if len(got) != 4 || !strings.Contains(got[0], `notifications/progress`) || !strings.Contains(got[2], `"progress":3`) || !strings.Contains(got[3], `"id":"p"`) {
		t.Fatalf("progress call's stream: %q", got)
	}
	// An unknown method reaches the session: method not found, on the stream.
	got = events(t, post(t, ts.URL, id, `{"jsonrpc":"2.0","id":9,"method":"no/such"}`, v))
	if len(got) != 1 || !strings.Contains(got[0], `-32601`) {
		t.Fatalf("unknown method: %q", got)
	}

	// 2026-07-28 requests on a stateful server: SEP-2575's refusal.
	body = status(t, post(t, ts.URL, id, call, map[string]string{protocolVersionHeader: v20260728}), http.StatusBadRequest)
	if !strings.Contains(body, `-32022`) || !strings.Contains(body, `"supported":["2025-11-25"`) {
		t.Fatalf("2026 call answered with %q", body)
	}
	status(t, post(t, ts.URL, id, `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{}}`, map[string]string{protocolVersionHeader: v20260728}), http.StatusBadRequest)

	// Other methods.
	resp := send(t, http.MethodPut, ts.URL, id, "", nil)
	status(t, resp, http.StatusMethodNotAllowed)
	if got := resp.Header.Get("Allow"); got != "GET, POST, DELETE" {
		t.Fatalf("PUT: Allow %q", got)
	}
	status(t, send(t, http.MethodDelete, ts.URL, "", "", nil), http.StatusBadRequest)

	// DNS rebinding: a loopback listener serves loopback names only.
	status(t, post(t, ts.URL, id, call, map[string]string{"Host": "evil.example"}), http.StatusForbidden)
	status(t, post(t, ts.URL, id, call, map[string]string{"Host": "localhost", protocolVersionHeader: "2025-11-25"}), http.StatusOK)

	// A first POST that does not initialize leaves no session behind.
	status(t, post(t, ts.URL, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil), http.StatusAccepted)
	waitFor(t, func() bool { return h.Sessions() == 1 })

	// DELETE ends the session; then it is unknown.
	status(t, send(t, http.MethodDelete, ts.URL, id, "", nil), http.StatusNoContent)
	status(t, post(t, ts.URL, id, call, v), http.StatusNotFound)
	waitFor(t, func() bool { return h.Sessions() == 0 })
}

// TestSessionBoundToToken: a session opened with a token answers only that
// token.
func TestSessionBoundToToken(t *testing.T) {
	checkGoroutines(t)
	h := New(func(*http.Request) *mcp.Server { return newTestServer().srv }, nil, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	withUser := auth.RequireBearerToken(verify, nil)(h)
	ts := httptest.NewServer(withUser)
	defer ts.Close()
	resp := post(t, ts.URL, "", initBody, map[string]string{"Authorization": "Bearer alice"})
	id := resp.Header.Get(sessionIDHeader)
	events(t, resp)
	call := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	status(t, post(t, ts.URL, id, call, map[string]string{"Authorization": "Bearer mallory"}), http.StatusForbidden)
	if got := events(t, post(t, ts.URL, id, call, map[string]string{"Authorization": "Bearer alice"})); len(got) != 1 {
		t.Fatalf("ping by the owner: %q", got)
	}
	status(t, send(t, http.MethodDelete, ts.URL, id, "", map[string]string{"Authorization": "Bearer mallory"}), http.StatusForbidden)
	status(t, send(t, http.MethodDelete, ts.URL, id, "", map[string]string{"Authorization": "Bearer alice"}), http.StatusNoContent)
	waitFor(t, func() bool { return h.Sessions() == 0 })
}

// TestStandaloneStream: one GET stream per session; a second conflicts; it
// ends with the session.
func TestStandaloneStream(t *testing.T) {
	checkGoroutines(t)
	h, ts := serve(t, newTestServer().srv, nil)
	id := initialize(t, ts.URL)
	get := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(sessionIDHeader, id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := get()
	defer first.Body.Close()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", first.Status)
	}
	// Headers and a comment arrive at once.
	br := bufio.NewReader(first.Body)
	if line, err := br.ReadString('\n'); err != nil || line != ": ok\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	second := get()
	second.Body.Close()
	if second.StatusCode != http.StatusConflict {
		t.Fatalf("second GET: %s", second.Status)
	}
	h.Close()
	// The stream ends with the session.
	if _, err := io.ReadAll(br); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return h.Sessions() == 0 })
}

// TestDirectMatchesServer: the direct path answers byte for byte as the
// server does, errors included.
func TestDirectMatchesServer(t *testing.T) {
	checkGoroutines(t)
	fx := newTestServer()
	_, viaServer := serve(t, newTestServer().srv, nil)
	_, viaDirect := serve(t, fx.srv, fx.directHandler)
	sServer, sDirect := initialize(t, viaServer.URL), initialize(t, viaDirect.URL)
	v := map[string]string{protocolVersionHeader: "2025-11-25"}
	for _, params := range []string{
		`{"name":"echo","arguments":{"text":"<a & b>"}}`,
		`{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":7}}`,
		`{"name":"echo","arguments":"not an object"}`,
		`{"name":"empty"}`,
		`{"name":"nope","arguments":{}}`,
		`{"name":"echo","arguments":{"text":"\u00e9\n"}}`,
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
		want := events(t, post(t, viaServer.URL, sServer, body, v))
		got := events(t, post(t, viaDirect.URL, sDirect, body, v))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\ndirect %q\nserver %q", params, got, want)
		}
	}
	if fx.direct.Load() != 6 {
		t.Fatalf("direct calls: %d, want 6", fx.direct.Load())
	}
}

// TestCancel: notifications/cancelled ends the call it names, on either
// path, and its answer still comes, as the SDK's server sends it: the
// tool's result, or "context canceled" when the server had not started it.
func TestCancel(t *testing.T) { modes(t, testCancel) }

func testCancel(t *testing.T, fx *testServer, direct func(*mcp.Server) mcp.MethodHandler) {
	checkGoroutines(t)
	_, ts := serve(t, fx.srv, direct)
	id := initialize(t, ts.URL)
	v := map[string]string{protocolVersionHeader: "2025-11-25"}
	answer := make(chan []string, 1)
	go func() {
		answer <- events(t, post(t, ts.URL, id, `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}}`, v))
	}()
	// Cancel until the call is in flight and takes it.
	for {
		status(t, post(t, ts.URL, id, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`, v), http.StatusAccepted)
		select {
		case got := <-answer:
			if len(got) != 1 || !strings.Contains(got[0], `"text":"cancelled"`) && !strings.Contains(got[0], `"message":"context canceled"`) {
				t.Fatalf("cancelled call answered %q", got)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
