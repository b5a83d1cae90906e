package session_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// lingerRecorder is a recorder that notes whether it was told a request
// goes on after its answer, and whether that came before the answer.
type lingerRecorder struct {
	*recorder
	lingered      atomic.Bool
	beforeAnswers atomic.Bool
}

func (l *lingerRecorder) Linger() {
	l.beforeAnswers.Store(len(l.messages()) == 0)
	l.lingered.Store(true)
}

// TestAnswerEarly: a request answered while its handler goes on is out of
// flight at once (its ID and slot free, Drain not waiting for it), gets
// that one answer only, and its handler ends with the session.
func TestAnswerEarly(t *testing.T) {
	checkGoroutines(t)
	ran := make(chan *session.Request, 1)
	lateResult := make(chan any, 1)
	s := session.New(session.Options{MaxInFlight: 1, Logger: testLogger(t), Methods: session.Methods{
		"work": func(ctx context.Context, r *session.Request) (any, error) {
			early := make(chan bool)
			go func() { early <- r.AnswerEarly("early", nil) }() // from another goroutine, as an ask does
			if !<-early {
				t.Error("AnswerEarly reported false for an unanswered request")
			}
			if r.AnswerEarly("again", nil) {
				t.Error("a second AnswerEarly reported true")
			}
			if ctx.Err() == nil {
				t.Error("the request's context still runs after its answer")
			}
			ran <- r
			<-r.Session.Context().Done()
			return <-lateResult, nil
		},
		"ping2": func(context.Context, *session.Request) (any, error) { return "pong", nil },
	}}, nil)
	initialize(t, s, "")
	id := makeID(t, 1)
	out := &lingerRecorder{recorder: newRecorder()}
	s.Go(context.Background(), call(t, 1, "work", nil), out)
	if got := decode[string](t, response(t, out.next(t), id)); got != "early" {
		t.Fatalf("answer %q, want the early one", got)
	}
	if !out.lingered.Load() || !out.beforeAnswers.Load() {
		t.Errorf("Linger called: %v, before the answer: %v; want both", out.lingered.Load(), out.beforeAnswers.Load())
	}
	<-ran

	// The handler still runs: its ID and its slot (MaxInFlight 1) are free.
	again := newRecorder()
	s.Go(context.Background(), call(t, 1, "ping2", nil), again)
	if got := decode[string](t, response(t, again.next(t), id)); got != "pong" {
		t.Fatalf("request reusing the ID: %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Fatalf("Drain waited for a request answered early: %v", err)
	}

	lateResult <- "late"
	s.Close() // ends Session.Context, then waits for the handler
	if msgs := out.messages(); len(msgs) != 1 {
		t.Fatalf("%d messages on the request's stream, want the early answer only:\n%s", len(msgs), dump(msgs))
	}
}

// TestAnsweredWithoutAnswer: a handler that returns ErrAnswered without
// having answered gets an internal error written, not silence.
func TestAnsweredWithoutAnswer(t *testing.T) {
	checkGoroutines(t)
	s := newSession(t, session.Options{Methods: session.Methods{
		"work": func(context.Context, *session.Request) (any, error) { return nil, session.ErrAnswered },
	}}, nil)
	initialize(t, s, "")
	wantError(t, handle(t, s, call(t, 1, "work", nil)), jsonrpc.CodeInternalError, "internal error")
}
