package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream/internal/testutil"
)

// secretHeader stands for a configured credential: it must reach every
// request and no error.
const secretHeader = "Bearer s3cret-token"

// streamServer is a go-sdk streamable HTTP server on 127.0.0.1 behind a
// handler that records each request and can be swapped for a fresh one at
// the same URL (a server restart).
type streamServer struct {
	t       *testing.T
	srv     *httptest.Server
	opts    *mcp.StreamableHTTPOptions
	server  atomic.Pointer[mcp.Server]
	handler atomic.Pointer[mcp.StreamableHTTPHandler]
	release chan struct{} // ends the hang tool

	mu      sync.Mutex
	seen    []seenRequest
	refuse  map[string]int                     // method → status to answer instead
	watch   func(r *http.Request, body []byte) // sees each request first
	changed chan struct{}                      // closed and replaced per request
}

type seenRequest struct {
	method string
	header http.Header
}

func newStreamServer(t *testing.T, opts *mcp.StreamableHTTPOptions) *streamServer {
	s := &streamServer{t: t, opts: opts, release: make(chan struct{}), refuse: map[string]int{}, changed: make(chan struct{})}
	s.restart()
	s.srv = httptest.NewServer(s)
	t.Cleanup(func() {
		close(s.release)
		s.closeSessions()
		s.srv.Close()
	})
	return s
}

// restart puts a new server and handler behind the URL and ends the old
// one's sessions, as a restarted process would have lost them.
func (s *streamServer) restart() {
	s.closeSessions()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: map[string]any{"type": "object"}}, progressTool)
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: map[string]any{"type": "object"}}, bigTool)
	srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// One message first: the go-sdk sends a stream's headers with it.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
			select {
			case <-ctx.Done():
			case <-s.release:
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		})
	s.server.Store(srv)
	s.handler.Store(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, s.opts))
}

func (s *streamServer) closeSessions() {
	if srv := s.server.Load(); srv != nil {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	}
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	s.seen = append(s.seen, seenRequest{method: r.Method, header: r.Header.Clone()})
	close(s.changed)
	s.changed = make(chan struct{})
	status, watch := s.refuse[r.Method], s.watch
	s.mu.Unlock()
	if watch != nil {
		watch(r, body)
	}
	if status != 0 {
		http.Error(w, strings.Repeat("e", 250)+"TAIL", status)
		return
	}
	s.handler.Load().ServeHTTP(w, r)
}

func (s *streamServer) setRefuse(method string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.refuse, method)
	} else {
		s.refuse[method] = status
	}
}

// requests returns the requests seen so far with the given HTTP method.
func (s *streamServer) requests(method string) []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []seenRequest
	for _, r := range s.seen {
		if r.method == method {
			out = append(out, r)
		}
	}
	return out
}

// waitRequest waits until a request with the given HTTP method arrived.
func (s *streamServer) waitRequest(method string) seenRequest {
	s.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if rs := s.requests(method); len(rs) > 0 {
			return rs[len(rs)-1]
		}
		select {
		case <-ch:
		case <-deadline:
			s.t.Fatalf("no %s request arrived", method)
		}
	}
}

func progressTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct{ N int }
	_ = json.Unmarshal(req.Params.Arguments, &args)
	if args.N == 0 {
		args.N = 3
	}
	tok := req.Params.GetProgressToken()
	for i := 1; i <= args.N; i++ {
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(args.N)}); err != nil {
			return nil, err
		}
	}
	if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "working"}); err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
}

func bigTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct{ N int }
	_ = json.Unmarshal(req.Params.Arguments, &args)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", args.N)}}}, nil
}

// syncBuffer collects log output for assertions.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type streamClient struct {
	*streamableConn
	t   *testing.T
	log *syncBuffer
}

// dialStream connects to s through a client of the test's own (so that its
// idle connections can be closed before the goroutines are counted) that
// adds a credential header, as headerTransport does for configured headers.
func dialStream(t *testing.T, s *streamServer, max int) *streamClient {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: &headerTransport{base: tr, headers: http.Header{"Authorization": {secretHeader}}}}
	buf := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: buf})
	conn, err := (&streamableTransport{URL: s.srv.URL, Client: hc, MaxMessageBytes: max, Logger: log}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := &streamClient{streamableConn: conn.(*streamableConn), t: t, log: buf}
	t.Cleanup(func() {
		_ = c.Close()
		if t.Failed() {
			t.Logf("connection log:\n%s", buf.String())
		}
	})
	return c
}

func makeRequest(t *testing.T, id int64, method string, params any) *jsonrpc.Request {
	t.Helper()
	r := &jsonrpc.Request{Method: method}
	if params != nil {
		raw, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		r.Params = raw
	}
	if id != 0 {
		var err error
		if r.ID, err = jsonrpc.MakeID(float64(id)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// write writes msg on the test's context: a request's stream is read for
// as long as the context of its Write lives.
func (c *streamClient) write(msg jsonrpc.Message) {
	c.t.Helper()
	if err := c.Write(c.t.Context(), msg); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *streamClient) read() jsonrpc.Message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

// call writes a request and reads until its response, returning every
// message read, the response last.
func (c *streamClient) call(id int64, method string, params any) []jsonrpc.Message {
	c.t.Helper()
	c.write(makeRequest(c.t, id, method, params))
	return c.readResponse(id)
}

func (c *streamClient) readResponse(id int64) []jsonrpc.Message {
	c.t.Helper()
	var msgs []jsonrpc.Message
	for {
		m := c.read()
		msgs = append(msgs, m)
		if r, ok := m.(*jsonrpc.Response); ok && r.ID.Raw() == id {
			if r.Error != nil {
				c.t.Fatalf("response %d: %v", id, r.Error)
			}
			return msgs
		}
	}
}

// initialize runs the handshake at 2025-11-25.
func (c *streamClient) initialize() {
	c.t.Helper()
	msgs := c.call(1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "test", "version": "1"},
	})
	if len(msgs) != 1 {
		c.t.Fatalf("initialize: got %d messages, want the response only", len(msgs))
	}
	c.write(makeRequest(c.t, 0, "notifications/initialized", map[string]any{}))
}

var callProgress = map[string]any{"name": "progress", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "tok"}}

// checkCallStream checks that msgs are n progress notifications (1…n) and a
// log message, all related to call id, and then its response.
func checkCallStream(t *testing.T, msgs []jsonrpc.Message, id int64, n int) {
	t.Helper()
	if len(msgs) != n+2 {
		t.Fatalf("got %d messages, want %d progress, a log message and the response", len(msgs), n)
	}
	want, _ := jsonrpc.MakeID(float64(id))
	for i, m := range msgs[:n+1] {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			t.Fatalf("message %d: %T before the response", i, m)
		}
		wantMethod := "notifications/progress"
		if i == n {
			wantMethod = "notifications/message"
		}
		if req.Method != wantMethod {
			t.Fatalf("message %d: method %s, want %s", i, req.Method, wantMethod)
		}
		if req.Extra != (relatedRequest{ID: want}) {
			t.Errorf("message %d: Extra %#v, want relatedRequest{%v}", i, req.Extra, want.Raw())
		}
		if i < n {
			var p struct{ Progress float64 }
			_ = json.Unmarshal(req.Params, &p)
			if p.Progress != float64(i+1) {
				t.Fatalf("message %d: progress %v, want %d (out of order)", i, p.Progress, i+1)
			}
		}
	}
	if r, ok := msgs[n+1].(*jsonrpc.Response); !ok || r.ID != want {
		t.Fatalf("last message %v, want the response to %d", msgs[n+1], id)
	}
}

func TestStreamableSession(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, nil)
	c := dialStream(t, s, 0)

	c.initialize()
	sid := c.SessionID()
	if sid == "" {
		t.Fatal("no session ID after initialize")
	}
	initialized := s.waitRequest(http.MethodPost)
	if got := initialized.header.Get(headerSessionID); got != sid {
		t.Errorf("initialized sent session %q, want %q", got, sid)
	}
	if got := initialized.header.Get(headerProtocol); got != "2025-11-25" {
		t.Errorf("initialized sent protocol version %q, want 2025-11-25", got)
	}

	msgs := c.call(2, "tools/list", nil)
	var list mcp.ListToolsResult
	if err := json.Unmarshal(msgs[len(msgs)-1].(*jsonrpc.Response).Result, &list); err != nil || len(list.Tools) != 3 {
		t.Fatalf("tools/list: %v, %d tools", err, len(list.Tools))
	}
	c.call(3, "logging/setLevel", map[string]any{"level": "debug"})
	checkCallStream(t, c.call(4, "tools/call", callProgress), 4, 3)
}

func TestStreamableOrderUnderBackpressure(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, nil)
	c := dialStream(t, s, 0)
	c.initialize()
	c.call(2, "logging/setLevel", map[string]any{"level": "debug"})
	const n = 200 // many more than the incoming queue holds
	c.write(makeRequest(t, 3, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"n": n}, "_meta": map[string]any{"progressToken": 7}}))
	// Nothing is read until the stream's reader waits on a full queue.
	testutil.Eventually(t, 5*time.Second, fmt.Sprintf("the incoming queue full (%d messages)", cap(c.incoming)), func() bool {
		return len(c.incoming) == cap(c.incoming)
	})
	checkCallStream(t, c.readResponse(3), 3, n)
}

func TestStreamableListChangedOnStandaloneStream(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, nil)
	c := dialStream(t, s, 0)
	c.initialize()
	get := s.waitRequest(http.MethodGet)
	if get.header.Get(headerSessionID) != c.SessionID() || get.header.Get("Accept") != "text/event-stream" {
		t.Errorf("standalone GET headers: %v", get.header)
	}

	// The GET may reach the server before its stream is registered there, so
	// add tools until a change notification comes through.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	type read struct {
		m   jsonrpc.Message
		err error
	}
	got := make(chan read, 1)
	go func() {
		m, err := c.Read(ctx)
		got <- read{m, err}
	}()
	for i := 0; ; i++ {
		s.server.Load().AddTool(&mcp.Tool{Name: fmt.Sprintf("added%d", i), InputSchema: map[string]any{"type": "object"}}, bigTool)
		select {
		case r := <-got:
			req, ok := r.m.(*jsonrpc.Request)
			if r.err != nil || !ok || req.Method != "notifications/tools/list_changed" {
				t.Fatalf("got %v, %v; want notifications/tools/list_changed", r.m, r.err)
			}
			if req.Extra != nil {
				t.Errorf("standalone stream message has Extra %#v", req.Extra)
			}
			return
		case <-tick.C:
		case <-ctx.Done():
			<-got // Read ends with ctx
			t.Fatal("no list_changed notification")
		}
	}
}

// TestStreamableStandaloneReconnect: a standalone stream that ends is
// reopened with the last event ID, after the server's retry delay; a 405
// then means no stream, which does not fail the connection.
func TestStreamableStandaloneReconnect(t *testing.T) {
	leakCheck(t)
	var (
		mu   sync.Mutex
		gets []http.Header
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == http.MethodGet:
			mu.Lock()
			gets = append(gets, r.Header.Clone())
			n := len(gets)
			mu.Unlock()
			if n > 2 {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "retry: 10\nid: e%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"n\":%d}}\n\n", n, n)
		case bytes.Contains(body, []byte(`"initialize"`)):
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(headerSessionID, "s1")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`)
		case bytes.Contains(body, []byte(`"ping"`)):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{}}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	c := dialStream(t, &streamServer{srv: srv}, 0)
	c.initialize()
	for i := 1; i <= 2; i++ {
		m, ok := c.read().(*jsonrpc.Request)
		if !ok || !bytes.Contains(m.Params, []byte(strconv.Itoa(i))) {
			t.Fatalf("message %d: %v", i, m)
		}
	}
	testutil.Eventually(t, 5*time.Second, "3 GET requests", func() bool { mu.Lock(); defer mu.Unlock(); return len(gets) == 3 })
	mu.Lock()
	if got := gets[0].Get(headerLastEventID); got != "" {
		t.Errorf("first GET sent Last-Event-ID %q", got)
	}
	if got := gets[1].Get(headerLastEventID); got != "e1" {
		t.Errorf("second GET sent Last-Event-ID %q, want e1", got)
	}
	if got := gets[2].Get(headerLastEventID); got != "e2" {
		t.Errorf("third GET sent Last-Event-ID %q, want e2", got)
	}
	mu.Unlock()
	c.call(2, "ping", nil)
	if err := c.failure(); err != nil {
		t.Fatalf("connection failed: %v", err)
	}
}

func TestStreamableHeadersAndDelete(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, nil)
	c := dialStream(t, s, 0)
	c.initialize()
	sid := c.SessionID()
	s.waitRequest(http.MethodGet)
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	del := s.requests(http.MethodDelete)
	if len(del) != 1 || del[0].header.Get(headerSessionID) != sid {
		t.Fatalf("DELETE requests %v, want one for session %s", del, sid)
	}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		for _, r := range s.requests(m) {
			if r.header.Get("Authorization") != secretHeader {
				t.Errorf("%s without the client's header: %v", m, r.header)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("read after close: %v, want io.EOF", err)
	}
	if err := c.Write(ctx, makeRequest(t, 9, "ping", nil)); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("write after close: %v, want ErrConnectionClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestStreamableConcurrentClose(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, nil)
	c := dialStream(t, s, 0)
	c.initialize()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _ = c.Close() })
	}
	wg.Wait()
	if n := len(s.requests(http.MethodDelete)); n != 1 {
		t.Errorf("%d DELETE requests, want 1", n)
	}
}

func TestStreamableStateless(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, &mcp.StreamableHTTPOptions{Stateless: true})
	c := dialStream(t, s, 0)
	c.initialize()
	if sid := c.SessionID(); sid != "" {
		t.Fatalf("session ID %q from a stateless server", sid)
	}
	s.waitRequest(http.MethodGet) // refused with 405: no standalone stream
	c.call(2, "tools/list", nil)
	msgs := c.call(3, "tools/call", map[string]any{"name": "big", "arguments": map[string]any{"n": 10}})
	if len(msgs) != 1 {
		t.Fatalf("got %v", msgs)
	}
	if err := c.failure(); err != nil {
		t.Fatalf("connection failed: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.requests(http.MethodDelete)); n != 0 {
		t.Errorf("%d DELETE requests without a session", n)
	}
}

func TestStreamableJSONResponse(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, &mcp.StreamableHTTPOptions{JSONResponse: true})
	c := dialStream(t, s, 0)
	c.initialize()
	if c.SessionID() == "" {
		t.Fatal("no session ID")
	}
	c.call(2, "tools/list", nil)
	// The go-sdk sends a JSON-mode call's notifications on the standalone
	// stream (unrelated, in no set order with the response), so only the
	// response is checked here; TestStreamableJSONBatch checks a batch.
	msgs := c.call(3, "tools/call", map[string]any{"name": "big", "arguments": map[string]any{"n": 10}})
	if len(msgs) != 1 {
		t.Fatalf("got %v, want the response", msgs)
	}
}

// TestStreamableJSONBatch: a server (not the go-sdk's) that answers a call
// with one JSON body holding the call's notifications and its response.
func TestStreamableJSONBatch(t *testing.T) {
	leakCheck(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case bytes.Contains(body, []byte(`"initialize"`)):
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(headerSessionID, "s1")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}`)
		case !bytes.Contains(body, []byte(`"id"`)):
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}},`+
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2}},`+
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":3}},`+
				`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}},`+
				`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}]`)
		}
	}))
	t.Cleanup(srv.Close)
	c := dialStream(t, &streamServer{srv: srv}, 0)
	c.initialize()
	c.mu.Lock()
	proto := c.proto
	c.mu.Unlock()
	if c.SessionID() != "s1" || proto != "2025-06-18" {
		t.Fatalf("session %q, protocol %q", c.SessionID(), proto)
	}
	checkCallStream(t, c.call(2, "tools/call", callProgress), 2, 3)
}

func TestStreamableSessionMissing(t *testing.T) {
	t.Run("post", func(t *testing.T) {
		leakCheck(t)
		s := newStreamServer(t, nil)
		s.setRefuse(http.MethodGet, http.StatusMethodNotAllowed) // only the POST can notice
		c := dialStream(t, s, 0)
		c.initialize()
		s.waitRequest(http.MethodGet)
		s.restart()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Write(ctx, makeRequest(t, 2, "tools/list", nil)); !errors.Is(err, mcp.ErrSessionMissing) {
			t.Fatalf("write after restart: %v, want ErrSessionMissing", err)
		}
		if _, err := c.Read(ctx); !errors.Is(err, mcp.ErrSessionMissing) {
			t.Fatalf("read after restart: %v, want ErrSessionMissing", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if n := len(s.requests(http.MethodDelete)); n != 0 {
			t.Errorf("%d DELETE requests for a missing session", n)
		}
	})
	t.Run("get", func(t *testing.T) {
		leakCheck(t)
		s := newStreamServer(t, nil)
		c := dialStream(t, s, 0)
		c.initialize()
		s.waitRequest(http.MethodGet)
		s.restart() // ends the old session, and so its GET stream
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Read(ctx); !errors.Is(err, mcp.ErrSessionMissing) {
			t.Fatalf("read after restart: %v, want ErrSessionMissing", err)
		}
		if err := c.Write(ctx, makeRequest(t, 2, "tools/list", nil)); !errors.Is(err, mcp.ErrSessionMissing) {
			t.Fatalf("write after restart: %v, want ErrSessionMissing", err)
		}
	})
}

func TestStreamableErrorStatus(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, nil)
	c := dialStream(t, s, 0)
	c.initialize()
	s.setRefuse(http.MethodPost, http.StatusServiceUnavailable)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Write(ctx, makeRequest(t, 2, "tools/list", nil))
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), strings.Repeat("e", 200)) {
		t.Fatalf("write: %v, want the status and the body's start", err)
	}
	if strings.Contains(err.Error(), "TAIL") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("write error quotes too much: %v", err)
	}
	s.setRefuse(http.MethodPost, 0)
	c.call(3, "tools/list", nil) // the session lives on
}

func TestStreamableOversize(t *testing.T) {
	const max = 1024
	t.Run("json with length", func(t *testing.T) {
		leakCheck(t)
		s := newStreamServer(t, &mcp.StreamableHTTPOptions{JSONResponse: true})
		c := dialStream(t, s, max)
		c.initialize()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := c.Write(ctx, makeRequest(t, 2, "tools/call", map[string]any{"name": "big", "arguments": map[string]any{"n": 1500}}))
		if !errors.Is(err, errTooLarge) {
			t.Fatalf("write: %v, want errTooLarge", err)
		}
		c.call(3, "ping", nil)
	})
	t.Run("json chunked", func(t *testing.T) {
		leakCheck(t)
		s := newStreamServer(t, &mcp.StreamableHTTPOptions{JSONResponse: true})
		c := dialStream(t, s, max)
		c.initialize()
		c.write(makeRequest(t, 2, "tools/call", map[string]any{"name": "big", "arguments": map[string]any{"n": 8000}}))
		c.call(3, "ping", nil) // the big answer never arrives; the session lives on
		waitLog(t, c, "message over the size limit")
	})
	t.Run("event", func(t *testing.T) {
		leakCheck(t)
		s := newStreamServer(t, nil)
		c := dialStream(t, s, max)
		c.initialize()
		c.write(makeRequest(t, 2, "tools/call", map[string]any{"name": "big", "arguments": map[string]any{"n": 1500}}))
		c.call(3, "ping", nil)
		waitLog(t, c, "message over the size limit")
	})
}

func waitLog(t *testing.T, c *streamClient, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(c.log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log has no %q:\n%s", want, c.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStreamableCancelStopsStream(t *testing.T) {
	leakCheck(t)
	s := newStreamServer(t, nil)
	gone := make(chan struct{})
	var once sync.Once
	s.watch = func(r *http.Request, body []byte) {
		if bytes.Contains(body, []byte(`"hang"`)) {
			context.AfterFunc(r.Context(), func() { once.Do(func() { close(gone) }) })
		}
	}
	c := dialStream(t, s, 0)
	c.initialize()

	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Write(ctx, makeRequest(t, 2, "tools/call", map[string]any{"name": "hang", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": 1}})); err != nil {
		t.Fatal(err)
	}
	if m := c.read(); m.(*jsonrpc.Request).Method != "notifications/progress" {
		t.Fatalf("got %v, want the call's progress", m)
	}
	cancel()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server still has the cancelled call's stream open")
	}
	// A notification is posted even on the call's cancelled context.
	if err := c.Write(ctx, makeRequest(t, 0, "notifications/cancelled", map[string]any{"requestId": 2})); err != nil {
		t.Fatalf("notification on a cancelled context: %v", err)
	}
	c.call(3, "tools/list", nil)
	if strings.Contains(c.log.String(), "request stream lost") {
		t.Errorf("a cancelled call was reported as lost:\n%s", c.log.String())
	}
}

// leakCheck fails the test if it leaves more goroutines behind than it
// found, after a grace period for those on their way out. Call it first, so
// that its cleanup runs after the test's servers and clients are closed.
func leakCheck(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(15 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func TestSSEParse(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		max    int
		want   []sseEvent
		lastID string
		retry  time.Duration
		err    error
	}{
		{name: "one event", in: "data: {}\n\n", want: []sseEvent{{data: []byte("{}")}}},
		{name: "multi-line data", in: "data: a\ndata:b\ndata:  c\n\n", want: []sseEvent{{data: []byte("a\nb\n c")}}},
		{name: "crlf and cr", in: "data: a\r\n\r\ndata: b\r\r", want: []sseEvent{{data: []byte("a")}, {data: []byte("b")}}},
		{name: "comments and unknown fields", in: ": ok\n\nfoo: bar\ndata: x\n: mid\n\n", want: []sseEvent{{data: []byte("x")}}},
		{name: "event name", in: "event: prime\nid: 1\n\nevent: message\ndata: y\n\n", want: []sseEvent{{name: "message", data: []byte("y")}}, lastID: "1"},
		{name: "id is sticky", in: "id: 7\ndata: a\n\ndata: b\n\n", want: []sseEvent{{data: []byte("a")}, {data: []byte("b")}}, lastID: "7"},
		{name: "id with NUL ignored", in: "id: 1\n\nid: a\x00b\n\n", lastID: "1"},
		{name: "retry", in: "retry: 250\nretry: x1\n\n", retry: 250 * time.Millisecond},
		{name: "field without colon", in: "data\ndata\n\n", want: []sseEvent{{data: []byte("\n")}}},
		{name: "byte order mark", in: "\ufeffdata: z\n\n", want: []sseEvent{{data: []byte("z")}}},
		{name: "last event without blank line", in: "id: 3\ndata: end", want: []sseEvent{{data: []byte("end")}}, lastID: "3"},
		{name: "unfinished id not kept", in: "id: 3\n", lastID: ""},
		{name: "line over limit", in: ": " + strings.Repeat("c", 23) + "\n\n", max: 8, err: errTooLarge},
		{name: "data over limit", in: "data: 1234\ndata: 5678\n\n", max: 8, err: errTooLarge},
		{name: "data at limit", in: "data: 1234\ndata: 567\n\n", max: 8, want: []sseEvent{{data: []byte("1234\n567")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = 1 << 10
			}
			sr := newSSEReader(&chunkReader{s: tt.in, n: 1}, max)
			got, err := readAllEvents(sr)
			if tt.err == nil && !errors.Is(err, io.EOF) || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if !sameEvents(got, tt.want) {
				t.Fatalf("events %q, want %q", got, tt.want)
			}
			if tt.err == nil && (sr.lastID != tt.lastID || sr.retry != tt.retry) {
				t.Fatalf("last ID %q, retry %v; want %q, %v", sr.lastID, sr.retry, tt.lastID, tt.retry)
			}
		})
	}
}

func FuzzSSEParse(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n", "data: a\r\ndata: b\r\n\r\n", "id: 1\ndata:x\r\rdata: y", ": c\nevent: m\ndata\n\n",
		"\ufeffdata: z\n\n", "retry: 10\nid: 7\n\n", "data: " + strings.Repeat("x", 300) + "\n\n", "\r\n\r\r\n\n",
	} {
		f.Add(s, uint8(3), uint16(64))
	}
	f.Fuzz(func(t *testing.T, in string, chunk uint8, limit uint16) {
		max := int(limit%1024) + 1
		sr := newSSEReader(&chunkReader{s: in, n: int(chunk%7) + 1}, max)
		got, err := readAllEvents(sr)
		for _, ev := range got {
			if len(ev.data) > max {
				t.Fatalf("event of %d bytes over the %d-byte limit", len(ev.data), max)
			}
		}
		want, lastID, retry, tooLarge := referenceSSE(in, max)
		if tooLarge != errors.Is(err, errTooLarge) || !tooLarge && !errors.Is(err, io.EOF) {
			t.Fatalf("error %v, reference says over the limit: %v", err, tooLarge)
		}
		if !sameEvents(got, want) {
			t.Fatalf("events %q, reference %q", got, want)
		}
		if !tooLarge && (sr.lastID != lastID || sr.retry != retry) {
			t.Fatalf("last ID %q, retry %v; reference %q, %v", sr.lastID, sr.retry, lastID, retry)
		}
	})
}

// referenceSSE is the SSE spec's event stream interpretation written the
// simplest way, on the whole input: normalise line ends, split, fold.
func referenceSSE(in string, max int) (evs []sseEvent, lastID string, retry time.Duration, tooLarge bool) {
	norm := strings.ReplaceAll(strings.ReplaceAll(in, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(norm, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the input ended with a line end
	}
	var (
		name, idBuf string
		data        []string
	)
	for i, line := range lines {
		if len(line) > max+sseLineSlack {
			return evs, lastID, retry, true
		}
		if i == 0 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if line == "" {
			lastID = idBuf
			if data != nil {
				evs = append(evs, sseEvent{name: name, data: []byte(strings.Join(data, "\n"))})
			}
			name, data = "", nil
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
			if len(strings.Join(data, "\n")) > max {
				return evs, lastID, retry, true
			}
		case "id":
			if !strings.Contains(value, "\x00") {
				idBuf = value
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				if n, err := strconv.ParseInt(value, 10, 64); err == nil && n <= math.MaxInt64/int64(time.Millisecond) {
					retry = time.Duration(n) * time.Millisecond
				}
			}
		}
	}
	if data != nil {
		lastID = idBuf
		evs = append(evs, sseEvent{name: name, data: []byte(strings.Join(data, "\n"))})
	}
	return evs, lastID, retry, false
}

func readAllEvents(sr *sseReader) ([]sseEvent, error) {
	var got []sseEvent
	for {
		ev, err := sr.next()
		if err != nil {
			return got, err
		}
		got = append(got, ev)
	}
}

func sameEvents(a, b []sseEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || !bytes.Equal(a[i].data, b[i].data) {
			return false
		}
	}
	return true
}

func (e sseEvent) String() string { return fmt.Sprintf("{%q %q}", e.name, e.data) }

// chunkReader returns at most n bytes per Read, so that line ends fall
// across reads.
type chunkReader struct {
	s string
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.s) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// TestStreamableDirectAnswer: with a direct function set, a call's response
// that is the first message of its stream (an event stream or a JSON body)
// goes to it on the stream's goroutine, not through Read; a response that
// follows the call's notifications comes through Read behind them.
func TestStreamableDirectAnswer(t *testing.T) {
	for _, jsonMode := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonMode), func(t *testing.T) {
			leakCheck(t)
			s := newStreamServer(t, &mcp.StreamableHTTPOptions{JSONResponse: jsonMode})
			c := dialStream(t, s, 0)
			direct := make(chan *jsonrpc.Response, 4)
			c.setDirect(func(r *jsonrpc.Response) { direct <- r })
			answer := func(id int64) {
				t.Helper()
				select {
				case r := <-direct:
					if r.ID.Raw() != id || r.Error != nil {
						t.Fatalf("direct answer %v (error %v), want the response to %d", r.ID.Raw(), r.Error, id)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("no direct answer to %d", id)
				}
			}

			c.write(makeRequest(t, 1, "initialize", map[string]any{
				"protocolVersion": "2025-11-25",
				"capabilities":    map[string]any{},
				"clientInfo":      map[string]any{"name": "test", "version": "1"},
			}))
			answer(1)
			c.mu.Lock()
			proto := c.proto
			c.mu.Unlock()
			if proto != "2025-11-25" || c.SessionID() == "" {
				t.Fatalf("after a direct answer to initialize: protocol %q, session %q", proto, c.SessionID())
			}
			c.write(makeRequest(t, 0, "notifications/initialized", map[string]any{}))

			c.write(makeRequest(t, 2, "tools/list", nil))
			answer(2)
			if jsonMode {
				c.write(makeRequest(t, 3, "tools/call", map[string]any{"name": "big", "arguments": map[string]any{"n": 10}}))
				answer(3)
				return
			}
			c.write(makeRequest(t, 3, "logging/setLevel", map[string]any{"level": "debug"}))
			answer(3)
			c.write(makeRequest(t, 4, "tools/call", callProgress))
			checkCallStream(t, c.readResponse(4), 4, 3)
			select {
			case r := <-direct:
				t.Fatalf("the response to %v went past its notifications", r.ID.Raw())
			default:
			}
		})
	}
}
