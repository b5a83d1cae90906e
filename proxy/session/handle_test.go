package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

func TestDuplicateInFlightID(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	s := newSession(t, session.Options{Methods: session.Methods{"block": b.handle}}, nil)
	initialize(t, s, "")
	id := makeID(t, 1)
	first := newRecorder()
	s.Go(context.Background(), call(t, 1, "block", nil), first)
	b.waitStarted(t, id)

	for _, via := range []string{"Handle", "Go"} {
		t.Run(via, func(t *testing.T) {
			dup := newRecorder()
			if via == "Handle" {
				s.Handle(context.Background(), call(t, 1, "block", nil), dup)
			} else {
				s.Go(context.Background(), call(t, 1, "block", nil), dup)
			}
			wantError(t, response(t, dup.next(t), id), jsonrpc.CodeInvalidRequest, "duplicate")
		})
	}
	if n := b.calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want once", n)
	}
	b.Release(id)
	if got := decode[map[string]any](t, response(t, first.next(t), id)); got["released"] != 1.0 {
		t.Fatalf("first call answered %v, want its own result", got)
	}
}

// reuser is a Stream that, when the answer to the request with ID id first
// arrives, hands a new request with the same ID to the session before
// Write returns, as a fast client may.
type reuser struct {
	*recorder
	s     *session.Session
	id    jsonrpc.ID
	async bool // Go instead of Handle
	again *recorder
	once  sync.Once
}

func (r *reuser) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := r.recorder.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == r.id {
		r.once.Do(func() {
			next := &jsonrpc.Request{ID: r.id, Method: "ping"}
			if r.async {
				r.s.Go(context.Background(), next, r.again)
			} else {
				r.s.Handle(context.Background(), next, r.again)
			}
		})
	}
	return err
}

func TestIDReusableOnceAnswered(t *testing.T) {
	checkGoroutines(t)
	for _, via := range []string{"Handle", "Go"} {
		t.Run(via, func(t *testing.T) {
			s := newSession(t, session.Options{Methods: session.Methods{
				"work": func(context.Context, *session.Request) (any, error) { return "done", nil },
			}}, nil)
			initialize(t, s, "")
			id := makeID(t, 7)
			out := &reuser{recorder: newRecorder(), s: s, id: id, async: via == "Go", again: newRecorder()}
			req := call(t, 7, "work", nil)
			if via == "Go" {
				s.Go(context.Background(), req, out)
			} else {
				s.Handle(context.Background(), req, out)
			}
			if got := decode[string](t, response(t, out.next(t), id)); got != "done" {
				t.Fatalf("first answer %q", got)
			}
			if r := response(t, out.again.next(t), id); r.Error != nil {
				t.Fatalf("request reusing an answered ID: %v, want it to run", r.Error)
			}
		})
	}
}

// TestSlotFreeOnceAnswered: with MaxInFlight 1, a client that sends its
// next request as soon as it has the previous answer is not refused; the
// slot, like the ID, is free before the answer goes out.
func TestSlotFreeOnceAnswered(t *testing.T) {
	checkGoroutines(t)
	s := newSession(t, session.Options{MaxInFlight: 1, Methods: session.Methods{
		"work": func(context.Context, *session.Request) (any, error) { return "done", nil },
	}}, nil)
	initialize(t, s, "")
	first, second := mustID(1), mustID(2)
	again := newRecorder()
	var once sync.Once
	out := &hookStream{recorder: newRecorder(), hook: func(m jsonrpc.Message) {
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == first {
			once.Do(func() { s.Go(context.Background(), &jsonrpc.Request{ID: second, Method: "work"}, again) })
		}
	}}
	s.Go(context.Background(), &jsonrpc.Request{ID: first, Method: "work"}, out)
	response(t, out.next(t), first)
	if r := response(t, again.next(t), second); r.Error != nil {
		t.Fatalf("request sent once the previous was answered: %v, want it to run", r.Error)
	}
}

// hookStream records to recorder, then calls hook with each message.
type hookStream struct {
	*recorder
	hook func(jsonrpc.Message)
}

func (h *hookStream) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := h.recorder.Write(ctx, msg)
	h.hook(msg)
	return err
}

func TestCancelledNotification(t *testing.T) {
	checkGoroutines(t)
	for _, tt := range []struct {
		name string
		id   any
	}{
		{name: "number ID", id: 5},
		{name: "string ID", id: "abc"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cancelled := make(chan error, 1)
			s := newSession(t, session.Options{Methods: session.Methods{
				"wait": func(ctx context.Context, r *session.Request) (any, error) {
					<-ctx.Done()
					cancelled <- ctx.Err()
					return nil, ctx.Err()
				},
			}}, nil)
			initialize(t, s, "")
			out := newRecorder()
			id := makeID(t, tt.id)
			s.Go(context.Background(), call(t, tt.id, "wait", nil), out)
			// No wait for the handler to start: the request is in flight
			// once Go returned.
			s.Go(context.Background(), notification(t, "notifications/cancelled", &mcp.CancelledParams{RequestID: tt.id, Reason: "user"}), out)
			r := response(t, out.next(t), id)
			wantError(t, r, jsonrpc.CodeInternalError, "internal error")
			if err := <-cancelled; !errors.Is(err, context.Canceled) {
				t.Fatalf("handler ctx ended with %v, want Canceled", err)
			}
		})
	}
}

func TestCancelledIgnoresOthers(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	s := newSession(t, session.Options{Methods: session.Methods{"block": b.handle}}, nil)
	initialize(t, s, "")
	out := newRecorder()
	id := makeID(t, 1)
	s.Go(context.Background(), call(t, 1, "block", nil), out)
	b.waitStarted(t, id)
	for _, params := range []string{`{"requestId":2}`, `{"requestId":"1"}`, `{"requestId":true}`, `[1]`, `{}`} {
		s.Handle(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(params)}, out)
	}
	s.Cancel(makeID(t, 3))
	b.Release(id)
	if got := decode[map[string]any](t, response(t, out.next(t), id)); got["released"] != 1.0 {
		t.Fatalf("call answered %v, want its result: a cancellation naming another ID cancelled it", got)
	}
}

func TestCancelMethod(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	s := newSession(t, session.Options{Methods: session.Methods{"block": b.handle}}, nil)
	initialize(t, s, "")
	out := newRecorder()
	s.Go(context.Background(), call(t, "c", "block", nil), out)
	s.Cancel(makeID(t, "c"))
	wantError(t, response(t, out.next(t), makeID(t, "c")), jsonrpc.CodeInternalError, "internal error")
}

func TestMaxInFlight(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	out := newRecorder()
	s := newSession(t, session.Options{MaxInFlight: 2, Methods: session.Methods{"block": b.handle}}, out)
	initialize(t, s, "")
	ctx := context.Background()
	s.Go(ctx, call(t, 1, "block", nil), out)
	s.Go(ctx, call(t, 2, "block", nil), out)
	s.Go(ctx, call(t, 3, "block", nil), out)
	// The third is answered at once, without waiting for the others.
	wantError(t, response(t, out.next(t), makeID(t, 3)), jsonrpc.CodeInternalError, "limit 2")

	// Notifications and answers are never refused.
	askDone := make(chan error, 1)
	go func() {
		_, err := s.Ask(ctx, "roots/list", nil)
		askDone <- err
	}()
	ask := out.next(t).(*jsonrpc.Request)
	s.Go(ctx, &jsonrpc.Response{ID: ask.ID, Result: json.RawMessage(`{}`)}, nil)
	if err := <-askDone; err != nil {
		t.Fatalf("answer handed to Go at the bound: %v", err)
	}
	s.Go(ctx, notification(t, "notifications/cancelled", &mcp.CancelledParams{RequestID: 1}), out)
	wantError(t, response(t, out.next(t), makeID(t, 1)), jsonrpc.CodeInternalError, "internal error")

	// A slot is free again.
	s.Go(ctx, call(t, 4, "block", nil), out)
	for _, id := range []any{2, 4} {
		b.Release(makeID(t, id))
	}
	got := map[any]bool{}
	for range 2 {
		r := out.next(t).(*jsonrpc.Response)
		if r.Error != nil {
			t.Fatalf("answer %v: %v", r.ID.Raw(), r.Error)
		}
		got[r.ID.Raw()] = true
	}
	if !got[int64(2)] || !got[int64(4)] {
		t.Fatalf("answered %v, want 2 and 4", got)
	}
	if n := b.calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3 (1, 2 and 4)", n)
	}
}

func TestDrain(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	out := newRecorder()
	s := newSession(t, session.Options{Methods: session.Methods{"block": b.handle}}, out)
	initialize(t, s, "")
	if err := s.Drain(context.Background()); err != nil {
		t.Fatalf("Drain with nothing in flight: %v", err)
	}
	s.Go(context.Background(), call(t, 1, "block", nil), out)
	s.Go(context.Background(), call(t, 2, "block", nil), out)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Drain(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain with requests in flight and ctx done = %v, want Canceled", err)
	}
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		drained <- s.Drain(ctx)
	}()
	b.Release(makeID(t, 1))
	response(t, out.next(t), makeID(t, 1))
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v with request 2 still in flight", err)
	default:
	}
	b.Release(makeID(t, 2))
	if err := <-drained; err != nil {
		t.Fatalf("Drain = %v, want nil once both answered", err)
	}
}

// TestConcurrentCalls runs many calls, cancellations and log-level changes
// at once; under -race it checks the session's locking, and that every call
// is answered exactly once.
func TestConcurrentCalls(t *testing.T) {
	checkGoroutines(t)
	out := newRecorder()
	s := newSession(t, session.Options{Methods: session.Methods{
		"work": func(ctx context.Context, r *session.Request) (any, error) {
			if err := r.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: "x"}); err != nil {
				return nil, err
			}
			return r.ID.Raw(), nil
		},
	}}, out)
	initialize(t, s, "")
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := w*each + i
				s.Go(context.Background(), &jsonrpc.Request{ID: mustID(id), Method: "work"}, out)
				if i%5 == 0 {
					s.Go(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(fmt.Sprintf(`{"requestId":%d}`, id))}, out)
				}
				if i%7 == 0 {
					s.Handle(context.Background(), &jsonrpc.Request{ID: mustID(fmt.Sprintf("lvl-%d", id)), Method: "logging/setLevel", Params: json.RawMessage(`{"level":"error"}`)}, out)
				}
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	s.Close() // waits until every answer was written
	seen := map[any]int{}
	for _, m := range out.messages() {
		if r, ok := m.(*jsonrpc.Response); ok {
			if _, isLevel := r.ID.Raw().(string); !isLevel {
				seen[r.ID.Raw()]++
			}
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d calls answered, want %d", len(seen), workers*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("call %v answered %d times", id, n)
		}
	}
}
