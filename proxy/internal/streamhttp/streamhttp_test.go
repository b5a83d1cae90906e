package streamhttp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// fixture is a Handler on a test server whose sessions are real
// session.Sessions answering the tools the tests call: echo, one that
// reports progress before answering, one that asks the client for its roots
// in the middle of the call, one that waits for cancellation, and one with
// an empty result. A session's principal is its opening request's
// Authorization header; only the same header may use it.
type fixture struct {
	h  *Handler
	ts *httptest.Server

	mu       sync.Mutex
	sessions map[string]*session.Session // every session opened, by ID

	// waiting receives the ID of each wait call once it runs.
	waiting chan jsonrpc.ID
	// resume lets a pause call answer.
	resume chan struct{}
}

// principal is what the fixture binds a session to.
func principal(r *http.Request) string { return r.Header.Get("Authorization") }

// newFixture serves a Handler; log nil discards its lines.
func newFixture(tb testing.TB, log hclog.Logger) *fixture {
	tb.Helper()
	if log == nil {
		log = hclog.NewNullLogger()
	}
	f := &fixture{sessions: map[string]*session.Session{}, waiting: make(chan jsonrpc.ID, 64), resume: make(chan struct{})}
	methods := f.methods()
	open := func(r *http.Request, id string) (*session.Session, error) {
		s := session.New(session.Options{
			ID:           id,
			Principal:    principal(r),
			Methods:      methods,
			ServerInfo:   &mcp.Implementation{Name: "test", Version: "1"},
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			Logger:       log.Named("session"),
		}, nil)
		f.mu.Lock()
		f.sessions[id] = s
		f.mu.Unlock()
		return s, nil
	}
	authorize := func(s *session.Session, r *http.Request) bool { return s.Principal() == principal(r) }
	f.h = New(open, authorize, log)
	f.ts = httptest.NewServer(f.h)
	tb.Cleanup(func() {
		f.h.Close()
		f.ts.CloseClientConnections()
		f.ts.Close()
	})
	return f
}

// session is the session the handler opened with the given ID.
func (f *fixture) session(tb testing.TB, id string) *session.Session {
	tb.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	if s == nil {
		tb.Fatalf("no session %q was opened", id)
	}
	return s
}

// opened counts the sessions the handler opened so far.
func (f *fixture) opened() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

var toolNames = []string{"echo", "progress", "roots", "wait", "empty", "pause", "notify_wait", "early"}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (f *fixture) methods() session.Methods {
	return session.Methods{
		"tools/list": func(context.Context, *session.Request) (any, error) {
			res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
			for _, name := range toolNames {
				res.Tools = append(res.Tools, &mcp.Tool{Name: name, InputSchema: &jsonschema.Schema{Type: "object"}})
			}
			return res, nil
		},
		"tools/call": f.callTool,
	}
}

func (f *fixture) callTool(ctx context.Context, r *session.Request) (any, error) {
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: " + err.Error()}
	}
	switch p.Name {
	case "echo":
		var in struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(p.Arguments, &in); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "echo: " + err.Error()}
		}
		return textResult(in.Text), nil
	case "progress":
		if tok := p.GetProgressToken(); tok != nil {
			for i := range 3 {
				if err := r.Notify(ctx, "notifications/progress", &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: float64(i + 1), Total: 3,
				}); err != nil {
					return nil, err
				}
			}
		}
		return textResult("done"), nil
	case "roots":
		raw, err := r.Ask(ctx, "roots/list", &mcp.ListRootsParams{})
		if err != nil {
			return nil, err
		}
		var res mcp.ListRootsResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, err
		}
		var uris []string
		for _, root := range res.Roots {
			uris = append(uris, root.URI)
		}
		return textResult(strings.Join(uris, ",")), nil
	case "wait":
		select {
		case f.waiting <- r.ID:
		default:
		}
		select {
		case <-ctx.Done():
			return textResult("cancelled"), nil
		case <-time.After(3 * time.Second):
			return textResult("not cancelled"), nil
		}
	case "empty":
		return &mcp.CallToolResult{}, nil
	case "notify_wait":
		// A progress notification, then the answer once the test lets it.
		if err := r.Notify(ctx, "notifications/progress", &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: 1}); err != nil {
			return nil, err
		}
		<-f.resume
		return textResult("after the wait"), nil
	case "early":
		// As a 2026-07-28 call that asks for input: answered (after a
		// progress notification if asked for), it goes on until the test
		// lets it end.
		if tok := p.GetProgressToken(); tok != nil {
			if err := r.Notify(ctx, "notifications/progress", &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1}); err != nil {
				return nil, err
			}
		}
		r.AnswerEarly(textResult("answered early"), nil)
		select {
		case <-f.resume:
		case <-time.After(15 * time.Second): // a failed test's cleanup waits for it
		}
		return nil, session.ErrAnswered
	case "pause":
		// As an upstream that closed its stream to be polled: the stream
		// closes, the answer comes once the test lets it.
		r.Pause(50 * time.Millisecond)
		select {
		case <-f.resume:
		case <-ctx.Done():
		}
		if err := r.Notify(ctx, "notifications/progress", &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: 1}); err != nil {
			return nil, err
		}
		return textResult("after the pause"), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", p.Name)}
}

// serve starts a fixture for a test, with a goroutine-leak check that
// runs once the fixture is closed.
func serve(t *testing.T) *fixture {
	t.Helper()
	checkGoroutines(t)
	return newFixture(t, testLogger(t))
}

// closed reports whether a session has ended, without waiting.
func closed(s *session.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func connect(t *testing.T, f *fixture, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts)
	c.AddRoots(&mcp.Root{URI: "file:///a"}, &mcp.Root{URI: "file:///b"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.ts.URL, HTTPClient: f.ts.Client()}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
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

// TestClientRoundTrip runs the go-sdk's own client against the handler,
// on a legacy session: calls, a call's progress,
// a server request inside a call, a notification with no call on the
// standalone stream, and the DELETE that ends the session.
func TestClientRoundTrip(t *testing.T) {
	f := serve(t)
	var progress atomic.Int32
	changed := make(chan struct{}, 1)
	cs := connect(t, f, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	// The client is pinned to 2025-11-25: it initializes a session.
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("negotiated %q, want 2025-11-25", got)
	}
	ss := f.session(t, cs.ID())
	if got := ss.ProtocolVersion(); got != "2025-11-25" {
		t.Fatalf("session's version %q", got)
	}
	if info := ss.ClientInfo(); info == nil || info.Name != "client" {
		t.Fatalf("session's client info %+v", info)
	}
	if n := f.opened(); n != 1 {
		t.Errorf("sessions opened: %d, want 1 (initialize)", n)
	}
	testutil.Eventually(t, 5*time.Second, "only the initialized session left", func() bool { return f.h.Sessions() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, toolNames) {
		t.Fatalf("tools/list: %q", names)
	}

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
	// notification handler ran; TestProgressBeforeAnswer checks the order on
	// the wire.
	testutil.Eventually(t, 5*time.Second, "3 progress notifications", func() bool { return progress.Load() == 3 })

	if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots"}); err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "file:///a,file:///b" {
		t.Fatalf("roots from inside a call: %q", got)
	}

	if _, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"}); err == nil || !strings.Contains(err.Error(), `unknown tool "nope"`) {
		t.Fatalf("unknown tool: %v", err)
	}

	// Not about a call: goes to the standalone GET stream, which the client
	// opens on its own once initialized.
	if err := notifyUntilDelivered(ss, "notifications/tools/list_changed"); err != nil {
		t.Errorf("session.Notify with no call: %v", err)
	} else {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Error("tools/list_changed never reached the client")
		}
	}

	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	// The client's DELETE ends the session.
	if !closed(ss) {
		t.Error("session still open after the client's DELETE")
	}
	testutil.Eventually(t, 5*time.Second, "no session left", func() bool { return f.h.Sessions() == 0 })
}

// notifyUntilDelivered sends a notification on the session's own stream,
// again while there is none yet: a client opens its GET stream on its own
// time.
func notifyUntilDelivered(ss *session.Session, method string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := ss.Notify(context.Background(), method, nil)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// send sends one raw request with a POST's headers, changed by hdr (an
// empty value removes a header; "Host" sets the request's host).
func send(tb testing.TB, f *fixture, method, sid, body string, hdr map[string]string) *http.Response {
	tb.Helper()
	resp, err := rawSend(f, method, sid, strings.NewReader(body), hdr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { resp.Body.Close() })
	return resp
}

// rawSend is send for any body, and for any goroutine.
func rawSend(f *fixture, method, sid string, body io.Reader, hdr map[string]string) (*http.Response, error) {
	return rawSendCtx(context.Background(), f, method, sid, body, hdr)
}

// rawSendCtx is rawSend bounded by ctx.
func rawSendCtx(ctx context.Context, f *fixture, method, sid string, body io.Reader, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, f.ts.URL, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(sessionIDHeader, sid)
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
	return f.ts.Client().Do(req)
}

// answered is what a POST answered: its status and events.
type answered struct {
	status int
	events []string
	err    error
}

// postAsync sends a POST whose answer may take long (net/http sends a POST's
// headers with its first event) and reads its events to the end.
func postAsync(f *fixture, sid, body string, hdr map[string]string) <-chan answered {
	ch := make(chan answered, 1)
	go func() {
		resp, err := rawSend(f, http.MethodPost, sid, strings.NewReader(body), hdr)
		if err != nil {
			ch <- answered{err: err}
			return
		}
		defer resp.Body.Close()
		got, err := readEvents(resp)
		ch <- answered{status: resp.StatusCode, events: got, err: err}
	}()
	return ch
}

// wantCancelled checks a call's answer: the wait tool's, cancelled.
func wantCancelled(t *testing.T, a answered, id string) {
	t.Helper()
	if a.err != nil || a.status != http.StatusOK || len(a.events) != 1 || !strings.Contains(a.events[0], `"text":"cancelled"`) || !strings.Contains(a.events[0], `"id":`+id) {
		t.Fatalf("cancelled call answered %d %q, %v", a.status, a.events, a.err)
	}
}

// post sends one raw POST.
func post(tb testing.TB, f *fixture, sid, body string, hdr map[string]string) *http.Response {
	tb.Helper()
	return send(tb, f, http.MethodPost, sid, body, hdr)
}

// get opens a standalone stream with GET's headers, changed by hdr.
func get(tb testing.TB, f *fixture, sid string, hdr map[string]string) *http.Response {
	tb.Helper()
	h := map[string]string{"Accept": "text/event-stream", "Content-Type": ""}
	for k, v := range hdr {
		h[k] = v
	}
	return send(tb, f, http.MethodGet, sid, "", h)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"raw","version":"1"}}}`

// v25 is the header of a request of an initialized 2025-11-25 session.
var v25 = map[string]string{protocolVersionHeader: "2025-11-25"}

// initialize opens a session by hand, with the given headers, and returns
// its ID.
func initialize(tb testing.TB, f *fixture, hdr map[string]string) string {
	tb.Helper()
	resp := post(tb, f, "", initBody, hdr)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("initialize: %s", resp.Status)
	}
	id := resp.Header.Get(sessionIDHeader)
	if id == "" {
		tb.Fatal("no session ID")
	}
	if got := events(tb, resp); len(got) != 1 || !strings.Contains(got[0], `"protocolVersion":"2025-11-25"`) {
		tb.Fatalf("initialize answered %q", got)
	}
	h := map[string]string{protocolVersionHeader: "2025-11-25"}
	for k, v := range hdr {
		h[k] = v
	}
	if r := post(tb, f, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h); r.StatusCode != http.StatusAccepted {
		tb.Fatalf("initialized: %s", r.Status)
	}
	return id
}

// events reads a response to its end and returns the data of each
// message event: an SSE stream's, or the one message of a plain JSON
// answer (a lone call's, when it was the first thing written).
func events(tb testing.TB, resp *http.Response) []string {
	tb.Helper()
	out, err := readEvents(resp)
	if err != nil {
		tb.Fatalf("%s: %v", resp.Status, err)
	}
	return out
}

func readEvents(resp *http.Response) ([]string, error) {
	switch ct := resp.Header.Get("Content-Type"); ct {
	case "text/event-stream":
	case "application/json":
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if !json.Valid(body) || resp.ContentLength != int64(len(body)) {
			return nil, fmt.Errorf("a plain answer of %d bytes, Content-Length %d: %s", len(body), resp.ContentLength, body)
		}
		return []string{string(body)}, nil
	default:
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("content type %q: %s", ct, body)
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
		case line == "data: " && event == "":
			// A priming event (SEP-1699): an ID, and no data.
		case strings.HasPrefix(line, "data: "):
			if event != "message" {
				return out, fmt.Errorf("data in event %q", event)
			}
			out = append(out, strings.TrimPrefix(line, "data: "))
		case line == "":
			event = ""
		}
	}
	return out, sc.Err()
}

// status checks a response's status and returns its body.
func status(tb testing.TB, resp *http.Response, want int) string {
	tb.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		tb.Fatalf("status %s, want %d: %s", resp.Status, want, body)
	}
	return string(body)
}

// wireMsg is one JSON-RPC message as the tests read it.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decode(tb testing.TB, data string) wireMsg {
	tb.Helper()
	var m wireMsg
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		tb.Fatalf("not a JSON-RPC message: %q: %v", data, err)
	}
	return m
}

// TestRequestChecks: what the handler refuses, and how. Every case runs
// on one initialized session, which goes on answering.
func TestRequestChecks(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	const discoverMeta = `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	const call2027 = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`
	v26 := map[string]string{protocolVersionHeader: v20260728, methodHeader: "server/discover"}
	// SEP-2663: a tasks method's Mcp-Name is its taskId.
	const taskGet = `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"t-1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, tc := range []struct {
		name   string
		method string // POST if empty
		sid    string // the session's if empty, none if "-"
		body   string
		hdr    map[string]string
		status int
		code   int    // a JSON-RPC error's code, if the body is one
		want   string // in the body
	}{
		{name: "content type", body: call, hdr: map[string]string{"Content-Type": "text/plain"}, status: http.StatusUnsupportedMediaType},
		{name: "no content type", body: call, hdr: map[string]string{"Content-Type": ""}, status: http.StatusUnsupportedMediaType},
		{name: "content type with charset", body: call, hdr: map[string]string{"Content-Type": "application/json; charset=utf-8", protocolVersionHeader: "2025-11-25"}, status: http.StatusOK},
		{name: "accept without event stream", body: call, hdr: map[string]string{"Accept": "application/json"}, status: http.StatusBadRequest},
		{name: "accept without json", body: call, hdr: map[string]string{"Accept": "text/event-stream"}, status: http.StatusBadRequest},
		{name: "accept wildcard", body: call, hdr: map[string]string{"Accept": "*/*", protocolVersionHeader: "2025-11-25"}, status: http.StatusOK},
		{name: "last event id", body: call, hdr: map[string]string{lastEventIDHeader: "x_1"}, status: http.StatusBadRequest},
		{name: "unknown session", sid: "nope", body: call, hdr: v25, status: http.StatusNotFound},
		{name: "empty body", body: "  ", hdr: v25, status: http.StatusBadRequest},
		{name: "unsupported version", body: call, hdr: map[string]string{protocolVersionHeader: "1999-01-01"}, status: http.StatusBadRequest},
		// Not JSON-RPC: a JSON-RPC parse error with a null ID.
		{name: "bad json", body: `{"jsonrpc":"2.0",`, hdr: v25, status: http.StatusBadRequest, code: jsonrpc.CodeParseError, want: `"id":null`},
		{name: "wrong jsonrpc version", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, hdr: v25, status: http.StatusBadRequest, code: jsonrpc.CodeParseError},
		{name: "trailing data", body: call + `x`, hdr: v25, status: http.StatusBadRequest, code: jsonrpc.CodeParseError},
		// Batches: refused from 2025-06-18.
		{name: "batch at 2025-06-18", body: `[` + call + `]`, hdr: map[string]string{protocolVersionHeader: "2025-06-18"}, status: http.StatusBadRequest, want: "batching is not supported"},
		{name: "batch at 2025-11-25", body: `[` + call + `]`, hdr: v25, status: http.StatusBadRequest, want: "batching is not supported"},
		{name: "duplicate ID in a batch", body: `[` + call + `,` + call + `]`, hdr: map[string]string{protocolVersionHeader: "2025-03-26"}, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidRequest, want: "duplicate request ID 7"},
		// SEP-2575: a 2026-07-28 request names its version in the header
		// and in _meta alike, one the server serves; server/discover lists
		// both eras.
		{name: "2026 call without meta", body: call, hdr: map[string]string{protocolVersionHeader: v20260728, methodHeader: "tools/call", nameHeader: "echo"}, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidParams, want: "missing or invalid _meta field"},
		{name: "later unknown version call", body: call2027, hdr: map[string]string{protocolVersionHeader: "2027-01-01", methodHeader: "tools/call", nameHeader: "echo"}, status: http.StatusBadRequest, code: mcp.CodeUnsupportedProtocolVersion, want: `"requested":"2027-01-01"`},
		{name: "2026 meta on a legacy call", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, hdr: v25, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "does not match"},
		{name: "discover", body: discoverMeta, hdr: v26, status: http.StatusOK, want: `"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`},
		{name: "tasks/get Mcp-Name mismatch", body: taskGet, hdr: map[string]string{protocolVersionHeader: v20260728, methodHeader: "tasks/get", nameHeader: "t-2"}, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "'t-2' does not match body value 't-1'"},
		{name: "tasks/get Mcp-Name missing", body: taskGet, hdr: map[string]string{protocolVersionHeader: v20260728, methodHeader: "tasks/get"}, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "missing required Mcp-Name header"},
		{name: "Mcp-Name missing", body: strings.Replace(call2027, "2027-01-01", v20260728, 1), hdr: map[string]string{protocolVersionHeader: v20260728, methodHeader: "tools/call"}, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "missing required Mcp-Name header"},
		{name: "Mcp-Name mismatch", body: strings.Replace(call2027, "2027-01-01", v20260728, 1), hdr: map[string]string{protocolVersionHeader: v20260728, methodHeader: "tools/call", nameHeader: "other"}, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "'other' does not match body value 'echo'"},
		{name: "GET without a session, 2026", method: http.MethodGet, sid: "-", hdr: map[string]string{"Accept": "text/event-stream", protocolVersionHeader: v20260728}, status: http.StatusMethodNotAllowed},
		{name: "discover without meta", body: `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{}}`, hdr: v26, status: http.StatusBadRequest, code: jsonrpc.CodeInvalidParams, want: "missing or invalid _meta field"},
		{name: "discover meta without header", body: discoverMeta, hdr: map[string]string{methodHeader: "server/discover"}, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "header is required"},
		{name: "discover meta mismatch", body: `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, hdr: v26, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "does not match"},
		{name: "Mcp-Method missing", body: discoverMeta, hdr: map[string]string{protocolVersionHeader: v20260728}, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "missing required Mcp-Method header"},
		{name: "Mcp-Method mismatch", body: discoverMeta, hdr: map[string]string{protocolVersionHeader: v20260728, methodHeader: "tools/list"}, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch, want: "'tools/list' does not match body value 'server/discover'"},
		{name: "Mcp-Method on a 2026 notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr: map[string]string{protocolVersionHeader: v20260728}, status: http.StatusBadRequest, code: mcp.CodeHeaderMismatch},
		// Other methods and hosts.
		{name: "PUT", method: http.MethodPut, status: http.StatusMethodNotAllowed, want: "Method Not Allowed"},
		{name: "DELETE without a session", method: http.MethodDelete, sid: "-", status: http.StatusBadRequest},
		{name: "DELETE of an unknown session", method: http.MethodDelete, sid: "nope", status: http.StatusNotFound},
		{name: "GET without a session", method: http.MethodGet, sid: "-", hdr: map[string]string{"Accept": "text/event-stream"}, status: http.StatusBadRequest},
		{name: "GET of an unknown session", method: http.MethodGet, sid: "nope", hdr: map[string]string{"Accept": "text/event-stream"}, status: http.StatusNotFound},
		{name: "GET without event stream", method: http.MethodGet, hdr: map[string]string{"Accept": "application/json"}, status: http.StatusBadRequest},
		{name: "GET with an unknown last event id", method: http.MethodGet, hdr: map[string]string{"Accept": "text/event-stream", lastEventIDHeader: "x_1"}, status: http.StatusNotFound, want: "does not hold"},
		{name: "GET with a malformed last event id", method: http.MethodGet, hdr: map[string]string{"Accept": "text/event-stream", lastEventIDHeader: "x"}, status: http.StatusBadRequest, want: "names no event"},
		// DNS rebinding: a loopback listener serves loopback names only.
		{name: "foreign host", body: call, hdr: map[string]string{"Host": "evil.example", protocolVersionHeader: "2025-11-25"}, status: http.StatusForbidden},
		{name: "localhost", body: call, hdr: map[string]string{"Host": "localhost", protocolVersionHeader: "2025-11-25"}, status: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, sid := tc.method, tc.sid
			if method == "" {
				method = http.MethodPost
			}
			switch sid {
			case "":
				sid = id
			case "-":
				sid = ""
			}
			resp := send(t, f, method, sid, tc.body, tc.hdr)
			var body string
			if tc.status == http.StatusOK {
				if resp.StatusCode != http.StatusOK {
					status(t, resp, tc.status)
				}
				body = strings.Join(events(t, resp), "\n")
			} else {
				body = status(t, resp, tc.status)
			}
			if tc.code != 0 {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("content type %q", ct)
				}
				if m := decode(t, body); m.Error == nil || m.Error.Code != tc.code {
					t.Fatalf("want JSON-RPC error %d, got %s", tc.code, body)
				}
			}
			if !strings.Contains(body, tc.want) {
				t.Fatalf("body %q lacks %q", body, tc.want)
			}
			if tc.method == http.MethodPut {
				if got := resp.Header.Get("Allow"); got != "GET, POST, DELETE" {
					t.Fatalf("Allow %q", got)
				}
			}
		})
	}

	// The refusal of an unknown version lists every version served, for
	// the client to choose from.
	resp := post(t, f, "", call2027, map[string]string{protocolVersionHeader: "2027-01-01", methodHeader: "tools/call", nameHeader: "echo"})
	m := decode(t, status(t, resp, http.StatusBadRequest))
	var data mcp.UnsupportedProtocolVersionData
	if m.Error == nil || json.Unmarshal(m.Error.Data, &data) != nil || !slices.Equal(data.Supported, session.AllVersions) || string(m.ID) != "7" {
		t.Fatalf("2027 call refused with %+v (data %s), want supported %q", m, m.Error.Data, session.AllVersions)
	}
	// A 2026-07-28 call is answered statelessly, with or without a
	// session ID, and opens no session.
	for _, sid := range []string{"", id} {
		body := strings.Replace(call2027, "2027-01-01", v20260728, 1)
		resp = post(t, f, sid, body, map[string]string{protocolVersionHeader: v20260728, methodHeader: "tools/call", nameHeader: "echo"})
		if resp.StatusCode != http.StatusOK || resp.Header.Get(sessionIDHeader) != "" {
			t.Fatalf("2026 call (session %q): %s, session ID %q", sid, status(t, resp, http.StatusOK), resp.Header.Get(sessionIDHeader))
		}
		if got := strings.Join(events(t, resp), "\n"); !strings.Contains(got, `"result":{"resultType":"complete",`) {
			t.Fatalf("2026 call (session %q) answered %s, want a complete result", sid, got)
		}
	}

	// Nothing refused ended the session.
	if f.h.Sessions() != 1 || closed(f.session(t, id)) {
		t.Fatalf("sessions %d after the checks", f.h.Sessions())
	}
}

// emptyResult is an empty CallToolResult as the empty tool's answer
// carries it.
var emptyResult = func() string {
	b, err := json.Marshal(&mcp.CallToolResult{})
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// TestAnswers: what a session answers on a POST's stream.
func TestAnswers(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	echo := func(id any, text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, id, text)
	}
	for _, tc := range []struct {
		name string
		body string
		hdr  map[string]string
		want []string // one per event, in any order: each in its event
	}{
		// Every case has IDs of its own: TestIDReusableAfterAnswer is about
		// reusing them.
		{name: "call", body: echo(7, "x"), hdr: v25, want: []string{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`}},
		{name: "string ID", body: echo(`"s"`, "<a & b>"), hdr: v25, want: []string{`"id":"s"`}},
		// The result goes out as the tool encodes it.
		{name: "empty result", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"empty"}}`, hdr: v25, want: []string{`{"jsonrpc":"2.0","id":1,"result":` + emptyResult + `}`}},
		{name: "unknown tool", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`, hdr: v25, want: []string{`"error":{"code":-32602,"message":"unknown tool \"x\""}`}},
		{name: "bad arguments", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":"not an object"}}`, hdr: v25, want: []string{`"code":-32602`}},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":9,"method":"no/such"}`, hdr: v25, want: []string{`"error":{"code":-32601`}},
		{name: "ping", body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`, hdr: v25, want: []string{`{"jsonrpc":"2.0","id":2,"result":{}}`}},
		{name: "tools/list", body: `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, hdr: v25, want: []string{`"name":"echo"`}},
		// Batches before 2025-06-18: one stream for every answer; a batch
		// without a version header is of the default, 2025-03-26.
		{name: "batch", body: `[` + echo(10, "x") + `,` + echo(11, "y") + `]`, hdr: map[string]string{protocolVersionHeader: "2025-03-26"}, want: []string{`"text":"x"`, `"text":"y"`}},
		{name: "batch without version", body: `[` + echo(12, "x") + `,{"jsonrpc":"2.0","method":"notifications/initialized"},` + echo(13, "y") + `]`, want: []string{`"text":"x"`, `"text":"y"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := events(t, post(t, f, id, tc.body, tc.hdr))
			if len(got) != len(tc.want) {
				t.Fatalf("events %q, want %d", got, len(tc.want))
			}
			// A batch's calls run at once: their answers come in any order.
			left := slices.Clone(got)
			for _, want := range tc.want {
				i := slices.IndexFunc(left, func(e string) bool { return strings.Contains(e, want) })
				if i < 0 {
					t.Fatalf("no event has %q: %q", want, got)
				}
				left = slices.Delete(left, i, i+1)
			}
		})
	}
	// An answer without a call: 202, no body.
	status(t, post(t, f, id, `{"jsonrpc":"2.0","id":"sb-99","result":{}}`, v25), http.StatusAccepted)
}

// TestLoneAnswerOneWrite: the answer to a POST's only call, with nothing
// sent before it on the POST's stream, is the whole response, plain JSON,
// and goes out with the headers in one write and a Content-Length; a
// stream with more than one event is an event stream, chunked, as is a
// batch's, even of one call (its answer is an array's element).
func TestLoneAnswerOneWrite(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	var writes atomic.Int64
	ts := httptest.NewUnstartedServer(f.h)
	ts.Listener = countingListener{Listener: ts.Listener, writes: &writes}
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	do := func(body string, hdr map[string]string) (*http.Response, []string, int64) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(sessionIDHeader, id)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		before := writes.Load()
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got := events(t, resp)
		return resp, got, writes.Load() - before
	}

	const echo = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	resp, got, n := do(echo, v25)
	if len(got) != 1 || !strings.Contains(got[0], `"text":"x"`) {
		t.Fatalf("events %q", got)
	}
	if n != 1 || resp.ContentLength <= 0 || len(resp.TransferEncoding) > 0 {
		t.Errorf("lone answer: %d writes, Content-Length %d, Transfer-Encoding %q; want 1 write with a Content-Length", n, resp.ContentLength, resp.TransferEncoding)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("lone answer: Content-Type %q, want application/json", ct)
	}
	if cc, conn := resp.Header.Get("Cache-Control"), resp.Header.Get("Connection"); cc != "" || conn != "" {
		t.Errorf("lone answer: an event stream's headers: Cache-Control %q, Connection %q", cc, conn)
	}

	const progress = `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok"}}}`
	resp, got, _ = do(progress, v25)
	if len(got) != 4 || !strings.Contains(got[3], `"text":"done"`) {
		t.Fatalf("progress call's stream: %q", got)
	}
	if resp.ContentLength != -1 || !slices.Equal(resp.TransferEncoding, []string{"chunked"}) || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("progress call: Content-Length %d, Transfer-Encoding %q, Content-Type %q; want a chunked event stream", resp.ContentLength, resp.TransferEncoding, resp.Header.Get("Content-Type"))
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-cache, no-transform" {
		t.Errorf("progress call: Cache-Control %q, want an event stream's", cc)
	}

	batch := `[` + strings.Replace(echo, `"id":1`, `"id":2`, 1) + `,` + strings.Replace(echo, `"id":1`, `"id":3`, 1) + `]`
	resp, got, _ = do(batch, map[string]string{protocolVersionHeader: "2025-03-26"})
	if len(got) != 2 {
		t.Fatalf("batch: events %q", got)
	}
	if resp.ContentLength != -1 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("batch: Content-Length %d, Content-Type %q; want a chunked event stream", resp.ContentLength, resp.Header.Get("Content-Type"))
	}
	resp, got, _ = do(`[`+strings.Replace(echo, `"id":1`, `"id":4`, 1)+`]`, map[string]string{protocolVersionHeader: "2025-03-26"})
	if ct := resp.Header.Get("Content-Type"); len(got) != 1 || ct != "text/event-stream" {
		t.Errorf("batch of one call: %q as %q, want one event of an event stream", got, ct)
	}
}

// countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestIDReusableAfterAnswer: once a call is answered, its ID is free
// again: a client that reuses it at once, alone or in a batch, is not told
// it is still in flight.
func TestIDReusableAfterAnswer(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	const other = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		answers    int
	}{
		{name: "alone", body: call, hdr: v25, answers: 1},
		{name: "in a batch", body: `[` + call + `,` + other + `]`, hdr: map[string]string{protocolVersionHeader: "2025-03-26"}, answers: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 500 {
				got := events(t, post(t, f, id, tc.body, tc.hdr))
				if len(got) != tc.answers || slices.ContainsFunc(got, func(e string) bool { return decode(t, e).Error != nil }) {
					t.Fatalf("call %d answered %q", i, got)
				}
			}
		})
	}
}

// TestProgressBeforeAnswer: a call's notifications go on its own stream,
// before its answer, whether it came alone or in a batch.
func TestProgressBeforeAnswer(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	const progress = `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok"}}}`
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
	}{
		{name: "alone", body: progress, hdr: v25},
		{name: "in a batch", body: `[` + progress + `]`, hdr: map[string]string{protocolVersionHeader: "2025-03-26"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := events(t, post(t, f, id, tc.body, tc.hdr))
			if len(got) != 4 {
				t.Fatalf("progress call's stream: %q", got)
			}
			for i, e := range got[:3] {
				m := decode(t, e)
				var p mcp.ProgressNotificationParams
				if m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil || p.ProgressToken != "tok" || p.Progress != float64(i+1) {
					t.Fatalf("event %d: %s", i, e)
				}
			}
			if m := decode(t, got[3]); string(m.ID) != `"p"` || !strings.Contains(string(m.Result), `"text":"done"`) {
				t.Fatalf("answer: %s", got[3])
			}
		})
	}
}

// TestServerRequestInCall: a request the session sends the client inside a
// call goes on the call's stream, and the client's answer, POSTed on its
// own, reaches the call.
func TestServerRequestInCall(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	resp := post(t, f, id, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roots"}}`, v25)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("roots call: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	var ask wireMsg
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" { // past the priming event
			ask = decode(t, data)
			break
		}
	}
	if ask.Method != "roots/list" || len(ask.ID) == 0 {
		t.Fatalf("first event on the call's stream: %+v", ask)
	}
	status(t, post(t, f, id, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"roots":[{"uri":"file:///r"}]}}`, v25), http.StatusAccepted)
	var rest []string
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			rest = append(rest, data)
		}
	}
	if len(rest) != 1 || !strings.Contains(rest[0], `"text":"file:///r"`) || decode(t, rest[0]).Error != nil {
		t.Fatalf("after the client's answer: %q", rest)
	}
}

// TestFirstPostWithoutInitialize: a first POST that does not initialize is
// answered and leaves no session behind.
func TestFirstPostWithoutInitialize(t *testing.T) {
	f := serve(t)
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		status     int
	}{
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: http.StatusAccepted},
		{name: "ping", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: http.StatusOK},
		{name: "tools/list", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, status: http.StatusOK},
		{name: "discover", body: `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			hdr: map[string]string{protocolVersionHeader: v20260728, methodHeader: "server/discover"}, status: http.StatusOK},
		{name: "duplicate IDs", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, status: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.opened()
			resp := post(t, f, "", tc.body, tc.hdr)
			status(t, resp, tc.status)
			if sid := resp.Header.Get(sessionIDHeader); sid != "" {
				t.Errorf("answer names session %q", sid)
			}
			if f.opened() != before+1 {
				t.Fatalf("sessions opened: %d, want %d", f.opened(), before+1)
			}
			// The handler closes it once the answer is out; a one-write
			// answer can reach the client a moment before that.
			testutil.Eventually(t, 5*time.Second, "the session closed", func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				for _, s := range f.sessions {
					if !closed(s) {
						return false
					}
				}
				return true
			})
			testutil.Eventually(t, 5*time.Second, "no session left", func() bool { return f.h.Sessions() == 0 })
		})
	}
	// A batch that initializes opens a session; its answer names it.
	resp := post(t, f, "", `[`+initBody+`]`, nil)
	sid := resp.Header.Get(sessionIDHeader)
	if got := events(t, resp); len(got) != 1 || sid == "" {
		t.Fatalf("batch initialize: session %q, %q", sid, got)
	}
	if f.h.Sessions() != 1 || !f.session(t, sid).Initialized() {
		t.Fatalf("sessions %d after a batch initialize", f.h.Sessions())
	}
}

// TestSessionBoundToToken: a session opened with a token answers only
// that token, on POST, GET and DELETE; to another it is unknown (404).
func TestSessionBoundToToken(t *testing.T) {
	f := serve(t)
	alice := map[string]string{"Authorization": "Bearer alice", protocolVersionHeader: "2025-11-25"}
	mallory := map[string]string{"Authorization": "Bearer mallory", protocolVersionHeader: "2025-11-25"}
	id := initialize(t, f, map[string]string{"Authorization": "Bearer alice"})
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	status(t, post(t, f, id, ping, mallory), http.StatusNotFound)
	status(t, post(t, f, id, ping, v25), http.StatusNotFound)
	status(t, get(t, f, id, mallory), http.StatusNotFound)
	if got := events(t, post(t, f, id, ping, alice)); len(got) != 1 || !strings.Contains(got[0], `"result":{}`) {
		t.Fatalf("ping by the owner: %q", got)
	}
	status(t, send(t, f, http.MethodDelete, id, "", mallory), http.StatusNotFound)
	if closed(f.session(t, id)) {
		t.Fatal("another token's DELETE closed the session")
	}
	status(t, send(t, f, http.MethodDelete, id, "", alice), http.StatusNoContent)
	if !closed(f.session(t, id)) {
		t.Fatal("the owner's DELETE left the session open")
	}
	testutil.Eventually(t, 5*time.Second, "no session left", func() bool { return f.h.Sessions() == 0 })
}

// TestStandaloneStream: one GET stream per session, opened at once; what
// the session sends outside a call goes on it; a second GET conflicts; it
// ends with the session.
func TestStandaloneStream(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	ss := f.session(t, id)
	if err := ss.Notify(context.Background(), "notifications/tools/list_changed", nil); err == nil {
		t.Error("notification with no stream open reported delivered")
	}
	stream := get(t, f, id, v25)
	if stream.StatusCode != http.StatusOK || stream.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %s %q", stream.Status, stream.Header.Get("Content-Type"))
	}
	// Headers and a comment arrive at once.
	br := bufio.NewReader(stream.Body)
	if line, err := br.ReadString('\n'); err != nil || line != ": ok\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	status(t, get(t, f, id, v25), http.StatusConflict)

	// The stream's events, until it ends.
	evs := make(chan string)
	ended := make(chan error, 1)
	go func() {
		defer close(evs)
		sc := bufio.NewScanner(br)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				evs <- data
			}
		}
		ended <- sc.Err()
	}()
	next := func() (wireMsg, bool) {
		t.Helper()
		select {
		case data, ok := <-evs:
			if !ok {
				t.Error("GET stream ended")
				return wireMsg{}, false
			}
			return decode(t, data), true
		case <-time.After(5 * time.Second):
			t.Error("nothing on the GET stream in 5s")
			return wireMsg{}, false
		}
	}

	// A notification with no call.
	if err := ss.Notify(context.Background(), "notifications/tools/list_changed", nil); err != nil {
		t.Errorf("session.Notify with the GET stream open: %v", err)
	} else if m, ok := next(); ok && m.Method != "notifications/tools/list_changed" {
		t.Errorf("GET stream: %+v", m)
	}

	// A request with no call, answered by a POST.
	type answer struct {
		raw json.RawMessage
		err error
	}
	asked := make(chan answer, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		raw, err := ss.Ask(ctx, "roots/list", &mcp.ListRootsParams{})
		asked <- answer{raw, err}
	}()
	select {
	case a := <-asked:
		t.Errorf("session.Ask with the GET stream open: %s, %v", a.raw, a.err)
	case data := <-evs:
		if m := decode(t, data); m.Method != "roots/list" {
			t.Errorf("GET stream: %+v", m)
		} else {
			status(t, post(t, f, id, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"roots":[]}}`, v25), http.StatusAccepted)
			if a := <-asked; a.err != nil || string(a.raw) != `{"roots":[]}` {
				t.Errorf("session.Ask: %s, %v", a.raw, a.err)
			}
		}
	}

	status(t, send(t, f, http.MethodDelete, id, "", v25), http.StatusNoContent)
	// The stream ends with the session.
	for range evs {
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "no session left", func() bool { return f.h.Sessions() == 0 })
}

// TestDelete: DELETE closes the session, cancels its calls and ends its
// streams; then the session is unknown.
func TestDelete(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	ss := f.session(t, id)
	stream := get(t, f, id, v25)
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", stream.Status)
	}
	answer := postAsync(f, id, `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}}`, v25)
	waitCall(t, f, "w")

	status(t, send(t, f, http.MethodDelete, id, "", v25), http.StatusNoContent)
	if !closed(ss) {
		t.Fatal("session open after DELETE answered")
	}
	wantCancelled(t, <-answer, `"w"`)
	if _, err := io.ReadAll(stream.Body); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "no session left", func() bool { return f.h.Sessions() == 0 })
	status(t, post(t, f, id, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, v25), http.StatusNotFound)
	status(t, get(t, f, id, v25), http.StatusNotFound)
	status(t, send(t, f, http.MethodDelete, id, "", v25), http.StatusNotFound)
}

// waitCall waits until the wait tool runs the call with the given ID.
func waitCall(t *testing.T, f *fixture, id any) {
	t.Helper()
	want, err := jsonrpc.MakeID(id)
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case got := <-f.waiting:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("wait call %v never ran", id)
		}
	}
}

// TestCancel: notifications/cancelled reaches the call it names, alone on
// its POST or in a batch, and the call's answer still comes.
func TestCancel(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	const wait = `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}}`
	const cancel = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"test"}}`
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
	}{
		{name: "alone", body: wait, hdr: v25},
		{name: "in a batch", body: `[` + wait + `]`, hdr: map[string]string{protocolVersionHeader: "2025-03-26"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := postAsync(f, id, tc.body, tc.hdr)
			waitCall(t, f, "w")
			status(t, post(t, f, id, cancel, v25), http.StatusAccepted)
			select {
			case a := <-answer:
				wantCancelled(t, a, `"w"`)
			case <-time.After(2 * time.Second):
				// The wait tool gives up after 3s on its own.
				t.Fatal("notifications/cancelled did not reach the call")
			}
		})
	}
}

// TestDuplicateInFlightID: a request ID still in flight on the session is
// refused on another POST; the first call is not disturbed.
func TestDuplicateInFlightID(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	answer := postAsync(f, id, `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}}`, v25)
	waitCall(t, f, "w")
	// The session answers on the POST's stream; the go-sdk's handler
	// answers the whole POST with a 400. Either is a JSON-RPC error.
	resp := post(t, f, id, `{"jsonrpc":"2.0","id":"w","method":"ping"}`, v25)
	var got string
	if resp.StatusCode == http.StatusBadRequest {
		got = status(t, resp, http.StatusBadRequest)
	} else if ev := events(t, resp); len(ev) == 1 {
		got = ev[0]
	}
	if m := decode(t, got); m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidRequest || string(m.ID) != `"w"` {
		t.Fatalf("duplicate in-flight ID answered %q", got)
	}
	status(t, post(t, f, id, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`, v25), http.StatusAccepted)
	wantCancelled(t, <-answer, `"w"`)
}

// TestBodyTooLarge: a body over MaxBodyBytes is refused with 413, whether
// its length is announced or not; one at the limit is served.
func TestBodyTooLarge(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	body := func(n int) string {
		const head, tail = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`, `"}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		status  int
	}{
		{name: "at the limit", size: MaxBodyBytes, status: http.StatusOK},
		{name: "at the limit, chunked", size: MaxBodyBytes, chunked: true, status: http.StatusOK},
		{name: "over the limit", size: MaxBodyBytes + 1, status: http.StatusRequestEntityTooLarge},
		{name: "over the limit, chunked", size: MaxBodyBytes + 1, chunked: true, status: http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(body(tc.size))
			if tc.chunked {
				r = io.MultiReader(r) // no length: sent chunked
			}
			resp, err := rawSend(f, http.MethodPost, id, r, v25)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if tc.status == http.StatusOK {
				if got := events(t, resp); len(got) != 1 || !strings.Contains(got[0], `"result":{}`) {
					t.Fatalf("ping at the limit: %q", got)
				}
				return
			}
			status(t, resp, tc.status)
		})
	}
	if closed(f.session(t, id)) {
		t.Fatal("a large body closed the session")
	}
}

// TestHandlerClose: Close ends every session, its calls and its streams,
// and may be called again, concurrently.
func TestHandlerClose(t *testing.T) {
	f := serve(t)
	withStream, withCall, withBatch := initialize(t, f, nil), initialize(t, f, nil), initialize(t, f, nil)
	stream := get(t, f, withStream, v25)
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", stream.Status)
	}
	call := postAsync(f, withCall, `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}}`, v25)
	waitCall(t, f, "w")
	batch := postAsync(f, withBatch, `[{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"wait"}}]`, map[string]string{protocolVersionHeader: "2025-03-26"})
	waitCall(t, f, "b")
	if f.h.Sessions() != 3 {
		t.Fatalf("sessions: %d", f.h.Sessions())
	}

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(f.h.Close)
	}
	wg.Wait()
	if n := f.h.Sessions(); n != 0 {
		t.Fatalf("sessions after Close: %d", n)
	}
	for _, id := range []string{withStream, withCall, withBatch} {
		if !closed(f.session(t, id)) {
			t.Errorf("session %s open after Close", id)
		}
	}
	if _, err := io.ReadAll(stream.Body); err != nil {
		t.Fatalf("GET stream: %v", err)
	}
	// A lone call runs on its POST: its answer, cancelled, still goes out.
	wantCancelled(t, <-call, `"w"`)
	// A batch's stream ends with the session, with or without the answer.
	if a := <-batch; a.err != nil || a.status != http.StatusOK || len(a.events) > 1 || len(a.events) == 1 && !strings.Contains(a.events[0], `"text":"cancelled"`) {
		t.Fatalf("batch in flight answered %d %q, %v", a.status, a.events, a.err)
	}
	f.h.Close()
}

// testLogger sends a test's log lines to t.Log.
func testLogger(t *testing.T) hclog.Logger { return testutil.Logger(t, "streamhttp") }

// checkGoroutines fails the test if it leaves goroutines behind.
func checkGoroutines(tb testing.TB) {
	tb.Helper()
	testutil.CheckGoroutines(tb, 5*time.Second)
}

// TestIdleSessionsExpire: with an idle timeout, a session with no request
// and no stream for that long ends (its ID is then unknown); one with an
// open standalone stream, or that keeps sending requests, stays.
func TestIdleSessionsExpire(t *testing.T) {
	f := serve(t)
	// The active session pings ten times per timeout: it expires only if
	// the machine stalls it for nine tenths of a second.
	const idle = time.Second
	f.h.SetIdleTimeout(idle)
	before := time.Now()
	abandoned := initialize(t, f, nil)
	listening := initialize(t, f, nil)
	stream := get(t, f, listening, v25)
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", stream.Status)
	}
	defer stream.Body.Close()
	active := initialize(t, f, nil)
	start := time.Now()
	pings := time.NewTicker(idle / 10)
	defer pings.Stop()
	for !closed(f.session(t, abandoned)) {
		if time.Since(start) > 20*idle {
			t.Fatalf("a session idle for %s is still open (timeout %s)", time.Since(start), idle)
		}
		status(t, post(t, f, active, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, v25), http.StatusOK)
		<-pings.C
	}
	if d := time.Since(before); d < idle {
		t.Errorf("a session expired after %s, before its idle timeout %s", d, idle)
	}
	status(t, post(t, f, abandoned, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, v25), http.StatusNotFound)
	if closed(f.session(t, listening)) {
		t.Error("a session with an open stream expired")
	}
	if closed(f.session(t, active)) {
		t.Error("a session that kept sending requests expired")
	}
	if n := f.h.Sessions(); n != 2 {
		t.Errorf("%d sessions open, want the two in use", n)
	}
	// 0 turns expiry off again: the listening session, its stream closed,
	// stays open for twice the timeout (the sweeps go on every 100 ms).
	f.h.SetIdleTimeout(0)
	stream.Body.Close()
	<-time.After(2 * idle)
	if closed(f.session(t, listening)) {
		t.Error("a session expired with the idle timeout off")
	}
}

// TestSlowBodyCut: a client that sends its headers and then its body too
// slowly loses the connection once the body timeout passes; a session's
// stream that stays open longer than that is not cut by it.
func TestSlowBodyCut(t *testing.T) {
	f := serve(t)
	const timeout = 300 * time.Millisecond
	f.h.SetBodyTimeout(timeout)
	id := initialize(t, f, nil)
	stream := get(t, f, id, v25)
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", stream.Status)
	}
	defer stream.Body.Close()

	const slow = 20
	conns := make([]net.Conn, slow)
	for i := range conns {
		c, err := net.Dial("tcp", f.ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 200\r\n\r\n{\"jsonrpc\":", f.ts.Listener.Addr())
		conns[i] = c
	}
	start := time.Now()
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		// The server answers the cut body (400) and closes, or just closes.
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("connection %d: %v, want it closed by the server", i, err)
		}
	}
	if d := time.Since(start); d > timeout+2*time.Second {
		t.Errorf("slow bodies held for %s (timeout %s)", d, timeout)
	}
	// The standalone stream outlived the body timeout and still works.
	time.Sleep(2 * timeout)
	if err := notifyUntilDelivered(f.session(t, id), "notifications/tools/list_changed"); err != nil {
		t.Fatalf("the GET stream after the body timeout: %v", err)
	}
	lines := bufio.NewScanner(stream.Body)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "notifications/tools/list_changed") {
			return
		}
	}
	t.Fatalf("the GET stream ended before the notification: %v", lines.Err())
}
