package sse_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/sse"
	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// wait bounds every wait for something another goroutine does; only a
// failing test waits that long.
const wait = 10 * time.Second

// chatter is how many notifications the chatty method sends before its
// answer.
const chatter = 50

// fixture is a Handler on a test server whose sessions are real
// session.Sessions. A session's principal is its GET's Authorization
// header; only the same header may POST to it.
type fixture struct {
	h  *sse.Handler
	ts *httptest.Server

	mu       sync.Mutex
	sessions map[string]*session.Session // every session opened, by ID
	closed   chan string                 // the ID of each session that closed
}

func principal(r *http.Request) string { return r.Header.Get("Authorization") }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	checkGoroutines(t)
	log := testLogger(t)
	f := &fixture{sessions: map[string]*session.Session{}, closed: make(chan string, 64)}
	methods := session.Methods{
		"tools/list": func(context.Context, *session.Request) (any, error) {
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "echo", InputSchema: &jsonschema.Schema{Type: "object"}}}}, nil
		},
		// chatty sends chatter progress notifications about the call,
		// then answers with the call's n.
		"chatty": func(ctx context.Context, r *session.Request) (any, error) {
			var p struct {
				N int `json:"n"`
			}
			if err := json.Unmarshal(r.Params, &p); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
			}
			for i := range chatter {
				if err := r.Notify(ctx, "notifications/progress", map[string]int{"progressToken": p.N, "progress": i}); err != nil {
					return nil, err
				}
			}
			return map[string]int{"n": p.N}, nil
		},
	}
	open := func(r *http.Request, id string, out session.Stream) (*session.Session, error) {
		s := session.New(session.Options{
			ID:         id,
			Principal:  principal(r),
			Methods:    methods,
			ServerInfo: &mcp.Implementation{Name: "sse-test", Version: "1"},
			OnClose:    func(s *session.Session) { f.closed <- s.ID() },
			Logger:     log.Named("session"),
		}, out)
		f.mu.Lock()
		f.sessions[id] = s
		f.mu.Unlock()
		return s, nil
	}
	authorize := func(s *session.Session, r *http.Request) bool { return s.Principal() == principal(r) }
	f.h = sse.New(open, authorize, log)
	f.ts = httptest.NewServer(f.h)
	t.Cleanup(func() {
		f.h.Close()
		f.ts.CloseClientConnections()
		f.ts.Close()
	})
	return f
}

func (f *fixture) session(t *testing.T, id string) *session.Session {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	if s == nil {
		t.Fatalf("no session %q was opened", id)
	}
	return s
}

type event struct{ name, data string }

// client is one open GET stream.
type client struct {
	endpoint string // the URL to POST to
	id       string // the session's ID
	auth     string
	events   chan event // closed when the stream ends
	cancel   context.CancelFunc
}

// open starts a GET with the given Authorization and reads its endpoint
// event.
func (f *fixture) open(t *testing.T, auth string) *client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.ts.URL+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET: status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("GET: Content-Type %q", ct)
	}
	c := &client{auth: auth, events: make(chan event, 4096), cancel: cancel}
	go readEvents(resp.Body, c.events)
	ev := c.next(t)
	if ev.name != "endpoint" {
		t.Fatalf("first event %q %q, want the endpoint", ev.name, ev.data)
	}
	path, id, ok := strings.Cut(ev.data, "?sessionid=")
	if !ok || path != "/sse" || id == "" || strings.ContainsAny(id, "&#/") {
		t.Fatalf("endpoint %q, want /sse?sessionid=<id>", ev.data)
	}
	c.endpoint, c.id = f.ts.URL+ev.data, id
	return c
}

// readEvents sends each event of body to events, and closes both at the
// end.
func readEvents(body io.ReadCloser, events chan<- event) {
	defer close(events)
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 8<<20)
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			events <- ev
			ev = event{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// next is the stream's next event.
func (c *client) next(t *testing.T) event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case ev, ok := <-c.events:
		if !ok {
			t.Fatal("stream ended")
		}
		return ev
	case <-ctx.Done():
		t.Fatalf("no event within %v", wait)
		return event{}
	}
}

// message is the stream's next event, a message event.
func (c *client) message(t *testing.T) jsonrpc.Message {
	t.Helper()
	ev := c.next(t)
	if ev.name != "message" {
		t.Fatalf("event %q %q, want a message", ev.name, ev.data)
	}
	msg, err := jsonrpc.DecodeMessage([]byte(ev.data))
	if err != nil {
		t.Fatalf("message %q: %v", ev.data, err)
	}
	return msg
}

// answer is the stream's next event, the answer to the request id.
func (c *client) answer(t *testing.T, id any) *jsonrpc.Response {
	t.Helper()
	msg := c.message(t)
	r, ok := msg.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("got %+v, want the answer to %v", msg, id)
	}
	if want, _ := jsonrpc.MakeID(id); r.ID != want {
		t.Fatalf("answer to %v, want to %v", r.ID.Raw(), id)
	}
	return r
}

// post POSTs body to url and returns the status and body of the answer.
func (f *fixture) post(t *testing.T, method, url, auth, contentType string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: read answer: %v", method, err)
	}
	return resp.StatusCode, string(got)
}

// send POSTs one message to c's session and checks it was accepted.
func (c *client) send(t *testing.T, f *fixture, msg string) {
	t.Helper()
	if code, body := f.post(t, http.MethodPost, c.endpoint, c.auth, "application/json", []byte(msg)); code != http.StatusAccepted {
		t.Fatalf("POST %s: status %d %q, want 202", msg, code, body)
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","clientInfo":{"name":"raw","version":"1"},"capabilities":{}}}`

func TestEndpointEvent(t *testing.T) {
	f := newFixture(t)
	a := f.open(t, "alice")
	// The session is open once its endpoint is out: a client may POST at
	// once.
	if n := f.h.Sessions(); n != 1 {
		t.Fatalf("Sessions() = %d after the endpoint event, want 1", n)
	}
	b := f.open(t, "alice")
	if a.id == b.id {
		t.Fatalf("two GETs share session ID %q", a.id)
	}
	if n := f.h.Sessions(); n != 2 {
		t.Fatalf("Sessions() = %d, want 2", n)
	}
	if s := f.session(t, a.id); s.ID() != a.id || s.Principal() != "alice" {
		t.Fatalf("session %q has principal %v, want alice", s.ID(), s.Principal())
	}
}

func TestPostAnswersOnStream(t *testing.T) {
	f := newFixture(t)
	c := f.open(t, "alice")
	code, body := f.post(t, http.MethodPost, c.endpoint, "alice", "application/json", []byte(initialize))
	if code != http.StatusAccepted || body != "" {
		t.Fatalf("POST initialize: %d %q, want 202 and no body", code, body)
	}
	r := c.answer(t, 1.0)
	var res mcp.InitializeResult
	if err := json.Unmarshal(r.Result, &res); err != nil || res.ProtocolVersion != "2024-11-05" || res.ServerInfo.Name != "sse-test" {
		t.Fatalf("initialize answered %s (%v)", r.Result, err)
	}
	c.send(t, f, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// A Content-Type with parameters is JSON too.
	if code, body := f.post(t, http.MethodPost, c.endpoint, "alice", "application/json; charset=utf-8", []byte(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)); code != http.StatusAccepted {
		t.Fatalf("POST with charset: %d %q", code, body)
	}
	if r := c.answer(t, "p"); r.Error != nil || string(r.Result) != "{}" {
		t.Fatalf("ping answered %s %v", r.Result, r.Error)
	}
	c.send(t, f, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := c.answer(t, 2.0); !strings.Contains(string(r.Result), `"name":"echo"`) {
		t.Fatalf("tools/list answered %s %v", r.Result, r.Error)
	}
	if !f.session(t, c.id).Initialized() {
		t.Fatal("session not initialized")
	}
}

// TestPostBodyAtLimit: a body of exactly MaxBodyBytes is taken.
func TestPostBodyAtLimit(t *testing.T) {
	f := newFixture(t)
	c := f.open(t, "alice")
	msg := []byte(`{"jsonrpc":"2.0","id":"big","method":"ping"}`)
	body := append(msg, bytes.Repeat([]byte(" "), sse.MaxBodyBytes-len(msg))...)
	c.send(t, f, string(body))
	c.answer(t, "big")
}

func TestPostRefused(t *testing.T) {
	f := newFixture(t)
	c := f.open(t, "alice")
	ping := []byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	big := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`), bytes.Repeat([]byte("x"), sse.MaxBodyBytes)...)
	big = append(big, `"}}`...)
	// Empty fields are a valid POST's: to c's endpoint, as alice, with
	// application/json; "-" is no header at all.
	tests := []struct {
		name, method, url, auth, contentType string
		body                                 []byte
		want                                 int
		wantBody                             string
	}{
		{name: "another principal", auth: "mallory", body: ping, want: http.StatusForbidden, wantBody: "another principal"},
		{name: "no principal", auth: "-", body: ping, want: http.StatusForbidden},
		{name: "unknown session", url: f.ts.URL + "/sse?sessionid=nope", body: ping, want: http.StatusNotFound},
		{name: "missing sessionid", url: f.ts.URL + "/sse", body: ping, want: http.StatusBadRequest, wantBody: "sessionid"},
		{name: "empty sessionid", url: f.ts.URL + "/sse?sessionid=", body: ping, want: http.StatusBadRequest, wantBody: "sessionid"},
		{name: "wrong content type", contentType: "text/plain", body: ping, want: http.StatusUnsupportedMediaType},
		{name: "no content type", contentType: "-", body: ping, want: http.StatusUnsupportedMediaType},
		{name: "malformed content type", contentType: "application/json; =", body: ping, want: http.StatusUnsupportedMediaType},
		{name: "body over MaxBodyBytes", body: big, want: http.StatusRequestEntityTooLarge, wantBody: fmt.Sprint(sse.MaxBodyBytes)},
		{name: "batch", body: []byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`), want: http.StatusBadRequest, wantBody: "batch"},
		{name: "not JSON", body: []byte(`{"jsonrpc":`), want: http.StatusBadRequest},
		{name: "not JSON-RPC", body: []byte(`{"hello":1}`), want: http.StatusBadRequest},
		{name: "empty body", body: nil, want: http.StatusBadRequest},
		{name: "PUT", method: http.MethodPut, body: ping, want: http.StatusMethodNotAllowed},
		{name: "DELETE", method: http.MethodDelete, want: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, url, auth, ct := tt.method, tt.url, tt.auth, tt.contentType
			if method == "" {
				method = http.MethodPost
			}
			if url == "" {
				url = c.endpoint
			}
			switch auth { // "-": none
			case "":
				auth = "alice"
			case "-":
				auth = ""
			}
			switch ct { // "-": none
			case "":
				ct = "application/json"
			case "-":
				ct = ""
			}
			code, body := f.post(t, method, url, auth, ct, tt.body)
			if code != tt.want || !strings.Contains(body, tt.wantBody) {
				t.Fatalf("%s: %d %q, want %d containing %q", tt.name, code, body, tt.want, tt.wantBody)
			}
		})
	}
	// None of them reached the session: the next message on the stream
	// is the answer to this ping.
	c.send(t, f, `{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	c.answer(t, "after")
	if s := f.session(t, c.id); s.Initialized() {
		t.Fatal("a refused POST reached the session")
	}
}

func TestGetFromForeignHost(t *testing.T) {
	f := newFixture(t)
	req, err := http.NewRequest(http.MethodGet, f.ts.URL+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example:80"
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET with a foreign Host on a loopback listener: %d, want 403", resp.StatusCode)
	}
	if n := f.h.Sessions(); n != 0 {
		t.Fatalf("Sessions() = %d, want 0", n)
	}
}

func TestSessionEndsWithGet(t *testing.T) {
	f := newFixture(t)
	c := f.open(t, "alice")
	keep := f.open(t, "alice")
	s := f.session(t, c.id)
	c.cancel()
	testutil.Eventually(t, wait, "Sessions() drops to 1", func() bool { return f.h.Sessions() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case id := <-f.closed:
		if id != c.id {
			t.Fatalf("session %q closed, want %q", id, c.id)
		}
	case <-ctx.Done():
		t.Fatal("session not closed when its GET ended")
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("session not done when its GET ended")
	}
	if code, _ := f.post(t, http.MethodPost, c.endpoint, "alice", "application/json", []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)); code != http.StatusNotFound {
		t.Fatalf("POST to an ended session: %d, want 404", code)
	}
	// The other session is untouched.
	keep.send(t, f, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	keep.answer(t, 1.0)
}

func TestHandlerClose(t *testing.T) {
	f := newFixture(t)
	a, b := f.open(t, "alice"), f.open(t, "bob")
	f.h.Close()
	for _, c := range []*client{a, b} {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		for open := true; open; {
			select {
			case _, open = <-c.events:
			case <-ctx.Done():
				cancel()
				t.Fatal("stream not ended by Close")
			}
		}
		cancel()
	}
	testutil.Eventually(t, wait, "Sessions() drops to 0", func() bool { return f.h.Sessions() == 0 })
}

// TestNotificationsPrecedeAnswer: many calls at once, each sending chatter
// notifications before its answer; each call's notifications all arrive, in
// order, before its answer.
func TestNotificationsPrecedeAnswer(t *testing.T) {
	f := newFixture(t)
	c := f.open(t, "alice")
	c.send(t, f, initialize)
	c.answer(t, 1.0)
	const calls = 20
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for n := range calls {
		wg.Go(func() {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"chatty","params":{"n":%d}}`, 100+n, n)
			req, err := http.NewRequest(http.MethodPost, c.endpoint, strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "alice")
			resp, err := f.ts.Client().Do(req)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				errs <- fmt.Errorf("call %d: status %d", n, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	progress := map[int]int{} // call → notifications seen
	for answered := 0; answered < calls; {
		switch m := c.message(t).(type) {
		case *jsonrpc.Request:
			var p struct {
				Token    int `json:"progressToken"`
				Progress int `json:"progress"`
			}
			if m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil {
				t.Fatalf("unexpected %s %s", m.Method, m.Params)
			}
			if p.Progress != progress[p.Token] {
				t.Fatalf("call %d: progress %d, want %d", p.Token, p.Progress, progress[p.Token])
			}
			progress[p.Token]++
		case *jsonrpc.Response:
			var res struct {
				N int `json:"n"`
			}
			if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
				t.Fatalf("answer %v: %s %v", m.ID.Raw(), m.Result, m.Error)
			}
			if m.ID.Raw() != int64(100+res.N) {
				t.Fatalf("answer %v carries call %d", m.ID.Raw(), res.N)
			}
			if got := progress[res.N]; got != chatter {
				t.Fatalf("call %d answered after %d notifications, want %d", res.N, got, chatter)
			}
			progress[res.N] = -1 << 20 // no more may come
			answered++
		}
	}
}

// flushWriter is a ResponseWriter for one GET that hands each flush of
// the stream to onFlush, on the handler's goroutine.
type flushWriter struct {
	hdr     http.Header
	mu      sync.Mutex
	buf     bytes.Buffer
	onFlush func(stream string)
	flushed chan string // the stream so far, at each flush
}

func (w *flushWriter) Header() http.Header { return w.hdr }
func (w *flushWriter) WriteHeader(int)     {}

func (w *flushWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *flushWriter) Flush() {
	w.mu.Lock()
	s, hook := w.buf.String(), w.onFlush
	w.onFlush = nil
	w.mu.Unlock()
	if hook != nil {
		hook(s)
	}
	w.flushed <- s
}

// TestPostRightAfterEndpoint: a client may POST as soon as it has read the
// endpoint event; the session must already be found then, not 404.
func TestPostRightAfterEndpoint(t *testing.T) {
	f := newFixture(t)
	status := make(chan int, 1)
	w := &flushWriter{hdr: http.Header{}, flushed: make(chan string, 16)}
	w.onFlush = func(stream string) {
		_, data, ok := strings.Cut(stream, "event: endpoint\ndata: ")
		if !ok {
			status <- -1
			return
		}
		endpoint, _, _ := strings.Cut(data, "\n")
		req := httptest.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		status <- rec.Code
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	go func() {
		defer close(served)
		f.h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/sse", nil))
	}()
	if code := <-status; code != http.StatusAccepted {
		t.Fatalf("POST on reading the endpoint: status %d, want 202", code)
	}
	// The answer follows on the stream.
	tctx, tcancel := context.WithTimeout(context.Background(), wait)
	defer tcancel()
	for answered := false; !answered; {
		select {
		case s := <-w.flushed:
			answered = strings.Contains(s, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		case <-tctx.Done():
			t.Fatal("ping not answered on the stream")
		}
	}
	cancel()
	<-served
	if n := f.h.Sessions(); n != 0 {
		t.Fatalf("Sessions() = %d after the GET returned, want 0", n)
	}
}

// TestOpenerRefuses: a session the Opener refuses is a 500, and nothing is
// left open.
func TestOpenerRefuses(t *testing.T) {
	checkGoroutines(t)
	h := sse.New(func(*http.Request, string, session.Stream) (*session.Session, error) {
		return nil, fmt.Errorf("no")
	}, nil, testLogger(t))
	ts := httptest.NewServer(h)
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || h.Sessions() != 0 {
		t.Fatalf("refused open: %d with %d sessions, want 500 and none", resp.StatusCode, h.Sessions())
	}
}

// TestGoSDKClient runs the go-sdk's own SSE client against the handler.
func TestGoSDKClient(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.SSEClientTransport{Endpoint: f.ts.URL + "/sse", HTTPClient: f.ts.Client()}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "sse-test" {
		t.Fatalf("server info %+v, want sse-test", info)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "echo" {
		t.Fatalf("tools %+v, want echo", res.Tools)
	}
	if n := f.h.Sessions(); n != 1 {
		t.Fatalf("Sessions() = %d, want 1", n)
	}
	f.mu.Lock()
	var s *session.Session
	for _, x := range f.sessions {
		s = x
	}
	f.mu.Unlock()
	if ci := s.ClientInfo(); ci == nil || ci.Name != "sdk-client" {
		t.Fatalf("session's client info %+v, want sdk-client", ci)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	testutil.Eventually(t, wait, "Sessions() drops to 0", func() bool { return f.h.Sessions() == 0 })
}

// testLogger sends a test's log lines to t.Log.
func testLogger(t *testing.T) hclog.Logger { return testutil.Logger(t, "sse") }

// checkGoroutines fails the test if it leaves goroutines behind.
func checkGoroutines(tb testing.TB) {
	tb.Helper()
	testutil.CheckGoroutines(tb, wait)
}
