package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// wait bounds every wait for something another goroutine does; only a
// failing test waits that long.
const wait = 10 * time.Second

// recorder is a Stream that keeps every message written to it, in order,
// and hands each to next.
type recorder struct {
	mu   sync.Mutex
	msgs []jsonrpc.Message
	ch   chan jsonrpc.Message
}

var _ session.Stream = (*recorder)(nil)

func newRecorder() *recorder { return &recorder{ch: make(chan jsonrpc.Message, 4096)} }

func (r *recorder) Write(_ context.Context, msg jsonrpc.Message) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
	r.ch <- msg
	return nil
}

// messages is a copy of what was written so far.
func (r *recorder) messages() []jsonrpc.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// next is the next message written, waiting for it at most wait.
func (r *recorder) next(t *testing.T) jsonrpc.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case m := <-r.ch:
		return m
	case <-ctx.Done():
		t.Fatalf("no message within %v; written so far: %s", wait, dump(r.messages()))
		return nil
	}
}

func dump(msgs []jsonrpc.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		data, _ := jsonrpc.EncodeMessage(m)
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// newSession returns a session closed when the test ends.
func newSession(t *testing.T, opt session.Options, out session.Stream) *session.Session {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = testLogger(t)
	}
	s := session.New(opt, out)
	t.Cleanup(s.Close)
	return s
}

func makeID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	if n, ok := v.(int); ok {
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatalf("MakeID(%v): %v", v, err)
	}
	return id
}

// mustID is makeID for goroutines other than the test's.
func mustID(v any) jsonrpc.ID {
	if n, ok := v.(int); ok {
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}

func call(t *testing.T, id any, method string, params any) *jsonrpc.Request {
	t.Helper()
	return &jsonrpc.Request{ID: makeID(t, id), Method: method, Params: marshal(t, params)}
}

func notification(t *testing.T, method string, params any) *jsonrpc.Request {
	t.Helper()
	return &jsonrpc.Request{Method: method, Params: marshal(t, params)}
}

func marshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	if v == nil {
		return nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// handle hands req to s with Handle and returns the one message it wrote:
// the answer.
func handle(t *testing.T, s *session.Session, req *jsonrpc.Request) *jsonrpc.Response {
	t.Helper()
	out := newRecorder()
	s.Handle(context.Background(), req, out)
	msgs := out.messages()
	if len(msgs) != 1 {
		t.Fatalf("%s: %d messages written, want the answer only:\n%s", req.Method, len(msgs), dump(msgs))
	}
	return response(t, msgs[0], req.ID)
}

// response is m as the answer to the request with the given ID.
func response(t *testing.T, m jsonrpc.Message, id jsonrpc.ID) *jsonrpc.Response {
	t.Helper()
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("got %s, want the answer to %v", dump([]jsonrpc.Message{m}), id.Raw())
	}
	if r.ID != id {
		t.Fatalf("answer has ID %v, want %v", r.ID.Raw(), id.Raw())
	}
	return r
}

// wantError checks that r is an error answer with the code and a message
// containing substr.
func wantError(t *testing.T, r *jsonrpc.Response, code int64, substr string) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(r.Error, &we) {
		t.Fatalf("answer %v: result %s, want error %d", r.ID.Raw(), r.Result, code)
	}
	if we.Code != code || !strings.Contains(we.Message, substr) {
		t.Fatalf("answer %v: error %d %q, want %d containing %q", r.ID.Raw(), we.Code, we.Message, code, substr)
	}
}

// decode checks that r is a result and decodes it into a T.
func decode[T any](t *testing.T, r *jsonrpc.Response) T {
	t.Helper()
	var v T
	if r.Error != nil {
		t.Fatalf("answer %v: error %v, want a result", r.ID.Raw(), r.Error)
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("answer %v: result %s: %v", r.ID.Raw(), r.Result, err)
	}
	return v
}

// initialize runs the initialize handshake at version.
func initialize(t *testing.T, s *session.Session, version string) *mcp.InitializeResult {
	t.Helper()
	params := fmt.Sprintf(`{"protocolVersion":%q,"clientInfo":{"name":"client","version":"1"},"capabilities":{"roots":{"listChanged":true}}}`, version)
	res := decode[*mcp.InitializeResult](t, handle(t, s, call(t, "init", "initialize", json.RawMessage(params))))
	s.Handle(context.Background(), notification(t, "notifications/initialized", nil), nil)
	return res
}

// blocker is a Handler that reports each call on started, then answers
// once its ID is released, or with ctx's error once ctx is done.
type blocker struct {
	started chan jsonrpc.ID
	mu      sync.Mutex
	release map[jsonrpc.ID]chan struct{}
	calls   atomic.Int32
}

func newBlocker() *blocker {
	return &blocker{started: make(chan jsonrpc.ID, 64), release: map[jsonrpc.ID]chan struct{}{}}
}

func (b *blocker) gate(id jsonrpc.ID) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := b.release[id]
	if ch == nil {
		ch = make(chan struct{})
		b.release[id] = ch
	}
	return ch
}

// Release lets the call with the given ID answer.
func (b *blocker) Release(id jsonrpc.ID) { close(b.gate(id)) }

func (b *blocker) handle(ctx context.Context, r *session.Request) (any, error) {
	b.calls.Add(1)
	b.started <- r.ID
	select {
	case <-b.gate(r.ID):
		return map[string]any{"released": r.ID.Raw()}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitStarted waits until the call with the given ID runs.
func (b *blocker) waitStarted(t *testing.T, want jsonrpc.ID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case id := <-b.started:
		if id != want {
			t.Fatalf("call %v started, want %v", id.Raw(), want.Raw())
		}
	case <-ctx.Done():
		t.Fatalf("call %v did not start within %v", want.Raw(), wait)
	}
}

func TestClose(t *testing.T) {
	checkGoroutines(t)
	var closes atomic.Int32
	b := newBlocker()
	out := newRecorder()
	s := session.New(session.Options{
		Logger:  testLogger(t),
		Methods: session.Methods{"block": b.handle},
		OnClose: func(*session.Session) { closes.Add(1) },
	}, out)
	initialize(t, s, "")
	for i := range 3 {
		s.Go(context.Background(), call(t, i, "block", nil), out)
	}
	askErr := make(chan error, 1)
	go func() {
		_, err := s.Ask(context.Background(), "roots/list", nil)
		askErr <- err
	}()
	for range 3 {
		<-b.started
	}
	if m, ok := out.next(t).(*jsonrpc.Request); !ok || m.Method != "roots/list" {
		t.Fatalf("stream got %v, want the ask", m)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(s.Close)
	}
	wg.Wait()
	if n := closes.Load(); n != 1 {
		t.Fatalf("OnClose ran %d times, want once", n)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	// Close waited for the requests: each was cancelled and answered.
	answered := map[any]bool{}
	for _, m := range out.messages() {
		if r, ok := m.(*jsonrpc.Response); ok {
			wantError(t, r, jsonrpc.CodeInternalError, "internal error")
			answered[r.ID.Raw()] = true
		}
	}
	if len(answered) != 3 {
		t.Fatalf("answered %v after Close, want the 3 cancelled calls", answered)
	}
	if err := <-askErr; !errors.Is(err, session.ErrClosed) {
		t.Fatalf("pending Ask = %v, want ErrClosed", err)
	}
	if _, err := s.Ask(context.Background(), "roots/list", nil); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Ask after Close = %v, want ErrClosed", err)
	}
	// A request after Close is not run.
	late := newRecorder()
	s.Handle(context.Background(), call(t, 10, "block", nil), late)
	s.Go(context.Background(), call(t, 11, "block", nil), late)
	if n := b.calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3: a request after Close ran", n)
	}
	s.Close()
	if n := closes.Load(); n != 1 {
		t.Fatalf("OnClose ran %d times after a second Close, want once", n)
	}
}

func TestSubscriptions(t *testing.T) {
	s := newSession(t, session.Options{}, nil)
	if !s.Subscribe("b://") || !s.Subscribe("a://") {
		t.Fatal("a new subscription is not new")
	}
	if s.Subscribe("a://") {
		t.Fatal("a repeated subscription is new")
	}
	if !s.Subscribed("a://") || s.Subscribed("c://") {
		t.Fatal("Subscribed disagrees with Subscribe")
	}
	if got := s.Subscriptions(); !slices.Equal(got, []string{"a://", "b://"}) {
		t.Fatalf("Subscriptions() = %v, want sorted [a:// b://]", got)
	}
	if !s.Unsubscribe("a://") || s.Unsubscribe("a://") || s.Subscribed("a://") {
		t.Fatal("Unsubscribe: want true once, then false")
	}
}

func TestAccessors(t *testing.T) {
	s := newSession(t, session.Options{ID: "id-1", Principal: "alice"}, nil)
	if s.ID() != "id-1" || s.Principal() != "alice" {
		t.Fatalf("ID %q Principal %v, want the options'", s.ID(), s.Principal())
	}
}

// testLogger sends a test's log lines to t.Log.
func testLogger(t *testing.T) hclog.Logger { return testutil.Logger(t, "session") }

// checkGoroutines fails the test if it leaves goroutines behind.
func checkGoroutines(tb testing.TB) {
	tb.Helper()
	testutil.CheckGoroutines(tb, wait)
}
