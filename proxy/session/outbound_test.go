package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

func TestNoStream(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, session.Options{}, nil)
	if err := s.Notify(ctx, "notifications/tools/list_changed", nil); !errors.Is(err, session.ErrNoStream) {
		t.Fatalf("Notify without a stream: %v, want ErrNoStream", err)
	}
	if _, err := s.Ask(ctx, "roots/list", nil); !errors.Is(err, session.ErrNoStream) {
		t.Fatalf("Ask without a stream: %v, want ErrNoStream", err)
	}
	out := newRecorder()
	s.SetStream(out)
	if err := s.Notify(ctx, "notifications/tools/list_changed", nil); err != nil {
		t.Fatalf("Notify after SetStream: %v", err)
	}
	if m, ok := out.next(t).(*jsonrpc.Request); !ok || m.Method != "notifications/tools/list_changed" || m.IsCall() {
		t.Fatalf("stream got %v, want the notification", m)
	}
	s.SetStream(nil)
	if err := s.Notify(ctx, "notifications/tools/list_changed", nil); !errors.Is(err, session.ErrNoStream) {
		t.Fatalf("Notify after SetStream(nil): %v, want ErrNoStream", err)
	}
}

func TestNotifyEncodeError(t *testing.T) {
	out := newRecorder()
	s := newSession(t, session.Options{}, out)
	if err := s.Notify(context.Background(), "x", make(chan int)); err == nil || !strings.Contains(err.Error(), "x:") {
		t.Fatalf("Notify with unencodable params: %v, want an error naming the method", err)
	}
	if n := len(out.messages()); n != 0 {
		t.Fatalf("%d messages written for unencodable params", n)
	}
}

func TestRequestNotifyGoesToRequestStream(t *testing.T) {
	sessOut := newRecorder()
	s := newSession(t, session.Options{Methods: session.Methods{
		"progress": func(ctx context.Context, r *session.Request) (any, error) {
			for i := range 3 {
				if err := r.Notify(ctx, "notifications/progress", map[string]any{"progressToken": "t", "progress": i}); err != nil {
					return nil, err
				}
			}
			return map[string]string{"done": "yes"}, nil
		},
	}}, sessOut)
	initialize(t, s, "")
	reqOut := newRecorder()
	req := call(t, 9, "progress", nil)
	s.Handle(context.Background(), req, reqOut)
	msgs := reqOut.messages()
	if len(msgs) != 4 {
		t.Fatalf("request stream got %d messages, want 3 notifications and the answer:\n%s", len(msgs), dump(msgs))
	}
	for i, m := range msgs[:3] {
		if n, ok := m.(*jsonrpc.Request); !ok || n.Method != "notifications/progress" || !strings.Contains(string(n.Params), fmt.Sprintf(`"progress":%d`, i)) {
			t.Fatalf("message %d is %s, want progress %d", i, dump([]jsonrpc.Message{m}), i)
		}
	}
	response(t, msgs[3], req.ID)
	if n := len(sessOut.messages()); n != 0 {
		t.Fatalf("session stream got %d messages, want none", n)
	}
}

func TestAsk(t *testing.T) {
	checkGoroutines(t)
	ctx := context.Background()
	out := newRecorder()
	s := newSession(t, session.Options{}, out)

	type answer struct {
		raw json.RawMessage
		err error
	}
	ask := func() (*jsonrpc.Request, chan answer) {
		ch := make(chan answer, 1)
		go func() {
			raw, err := s.Ask(ctx, "roots/list", &mcp.ListRootsParams{})
			ch <- answer{raw, err}
		}()
		req, ok := out.next(t).(*jsonrpc.Request)
		if !ok || !req.IsCall() || req.Method != "roots/list" {
			t.Fatalf("stream got %v, want the roots/list request", req)
		}
		return req, ch
	}

	t.Run("result", func(t *testing.T) {
		req, ch := ask()
		s.Handle(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`)}, nil)
		a := <-ch
		if a.err != nil || string(a.raw) != `{"roots":[{"uri":"file:///a"}]}` {
			t.Fatalf("Ask = %s, %v; want the client's result", a.raw, a.err)
		}
	})
	t.Run("error", func(t *testing.T) {
		req, ch := ask()
		// Through Go: an answer is handled inline.
		s.Go(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: -1, Message: "no roots"}}, nil)
		a := <-ch
		var we *jsonrpc.Error
		if !errors.As(a.err, &we) || we.Code != -1 {
			t.Fatalf("Ask error %v, want the client's error", a.err)
		}
	})
	t.Run("IDs differ", func(t *testing.T) {
		r1, ch1 := ask()
		r2, ch2 := ask()
		if r1.ID == r2.ID {
			t.Fatalf("two asks share ID %v", r1.ID.Raw())
		}
		// Answered in the other order: each gets its own.
		s.Handle(ctx, &jsonrpc.Response{ID: r2.ID, Result: json.RawMessage(`2`)}, nil)
		s.Handle(ctx, &jsonrpc.Response{ID: r1.ID, Result: json.RawMessage(`1`)}, nil)
		if a1, a2 := <-ch1, <-ch2; string(a1.raw) != "1" || string(a2.raw) != "2" {
			t.Fatalf("answers %s and %s, want 1 and 2", a1.raw, a2.raw)
		}
	})
	t.Run("unknown answer ignored", func(t *testing.T) {
		s.Handle(ctx, &jsonrpc.Response{ID: makeID(t, "sb-999"), Result: json.RawMessage(`{}`)}, nil)
	})
}

func TestRequestAskUsesRequestStream(t *testing.T) {
	checkGoroutines(t)
	sessOut := newRecorder()
	s := newSession(t, session.Options{Methods: session.Methods{
		"roots": func(ctx context.Context, r *session.Request) (any, error) {
			return r.Ask(ctx, "roots/list", nil)
		},
	}}, sessOut)
	initialize(t, s, "")
	reqOut := newRecorder()
	s.Go(context.Background(), call(t, 1, "roots", nil), reqOut)
	ask, ok := reqOut.next(t).(*jsonrpc.Request)
	if !ok || ask.Method != "roots/list" {
		t.Fatalf("request stream got %v, want roots/list", ask)
	}
	s.Go(context.Background(), &jsonrpc.Response{ID: ask.ID, Result: json.RawMessage(`{"roots":[]}`)}, nil)
	if r := response(t, reqOut.next(t), makeID(t, 1)); string(r.Result) != `{"roots":[]}` {
		t.Fatalf("answer %s, want the client's roots", r.Result)
	}
	if n := len(sessOut.messages()); n != 0 {
		t.Fatalf("session stream got %d messages, want none", n)
	}
}

func TestAskCancelledSendsCancelled(t *testing.T) {
	checkGoroutines(t)
	out := newRecorder()
	s := newSession(t, session.Options{}, out)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Ask(ctx, "sampling/createMessage", map[string]any{})
		done <- err
	}()
	req, ok := out.next(t).(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		t.Fatalf("stream got %v, want the request", req)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask = %v, want Canceled", err)
	}
	n, ok := out.next(t).(*jsonrpc.Request)
	if !ok || n.Method != "notifications/cancelled" || n.IsCall() {
		t.Fatalf("stream got %v, want notifications/cancelled", n)
	}
	var p mcp.CancelledParams
	if err := json.Unmarshal(n.Params, &p); err != nil {
		t.Fatal(err)
	}
	if p.RequestID != req.ID.Raw() {
		t.Fatalf("cancelled names %v, want %v", p.RequestID, req.ID.Raw())
	}
	// A late answer is dropped, not delivered or blocked on.
	s.Handle(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}, nil)
}

func TestRootsChanged(t *testing.T) {
	checkGoroutines(t)
	called := make(chan *session.Session, 1)
	s := newSession(t, session.Options{OnRootsChanged: func(s *session.Session) { called <- s }}, nil)
	s.Go(context.Background(), notification(t, "notifications/roots/list_changed", nil), nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case got := <-called:
		if got != s {
			t.Fatal("OnRootsChanged got another session")
		}
	case <-ctx.Done():
		t.Fatal("OnRootsChanged not called")
	}
	s.Close()
	s.Handle(context.Background(), notification(t, "notifications/roots/list_changed", nil), nil)
	select {
	case <-called:
		t.Fatal("OnRootsChanged called after Close")
	default:
	}
}

// TestOnInitialized: notifications/initialized calls OnInitialized with
// the session, off the reader, and not after Close.
func TestOnInitialized(t *testing.T) {
	checkGoroutines(t)
	called := make(chan *session.Session, 1)
	s := newSession(t, session.Options{OnInitialized: func(s *session.Session) { called <- s }}, nil)
	s.Handle(context.Background(), notification(t, "notifications/initialized", nil), nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case got := <-called:
		if got != s {
			t.Fatal("OnInitialized got another session")
		}
	case <-ctx.Done():
		t.Fatal("OnInitialized not called")
	}
	s.Close()
	s.Handle(context.Background(), notification(t, "notifications/initialized", nil), nil)
	select {
	case <-called:
		t.Fatal("OnInitialized called after Close")
	default:
	}
}

// TestRootsChangedMayAsk: the callback runs off the caller's goroutine, so
// it may ask the client while the transport waits for the answer.
func TestRootsChangedMayAsk(t *testing.T) {
	checkGoroutines(t)
	out := newRecorder()
	got := make(chan string, 1)
	s := newSession(t, session.Options{OnRootsChanged: func(s *session.Session) {
		raw, err := s.Ask(context.Background(), "roots/list", nil)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(raw)
	}}, out)
	s.Handle(context.Background(), notification(t, "notifications/roots/list_changed", nil), nil)
	ask := out.next(t).(*jsonrpc.Request)
	s.Handle(context.Background(), &jsonrpc.Response{ID: ask.ID, Result: json.RawMessage(`{"roots":[]}`)}, nil)
	if g := <-got; g != `{"roots":[]}` {
		t.Fatalf("callback's Ask got %s", g)
	}
}
