package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How a session takes a message: requests put in flight, run (on the
// caller's goroutine or a worker's), dispatched and answered;
// notifications and the answers to switchboard's own requests.

// Go hands a message over and returns without waiting for a request's
// answer: a request runs on a goroutine the session owns, bounded by
// MaxInFlight (a request over the bound is answered with an error at once),
// and is in flight when Go returns, so a cancellation read next finds it.
// Notifications and answers to switchboard's own requests are handled
// before Go returns; they are never refused.
func (s *Session) Go(ctx context.Context, msg jsonrpc.Message, out Stream) {
	m, ok := msg.(*jsonrpc.Request)
	if !ok || !m.IsCall() {
		s.Handle(ctx, msg, out)
		return
	}
	if s.busy.Add(1) > int32(s.opt.MaxInFlight) {
		s.busy.Add(-1)
		s.replyTo(out, m.ID, false, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("too many requests in flight on this session (limit %d)", s.opt.MaxInFlight)})
		return
	}
	rctx, release, ok := s.begin(ctx, m, out)
	if !ok {
		s.busy.Add(-1)
		return
	}
	// The slot, like the ID, is free before the answer goes out: a client
	// may send its next request as soon as it has the answer.
	j := job{ctx: rctx, release: func() { release(); s.busy.Add(-1) }, m: m, out: out}
	s.jobsOnce.Do(func() { s.jobs = make(chan job) }) // a stateless session never needs it
	select {
	case s.jobs <- j: // an idle worker takes it
	default:
		s.workers.Go(func() { s.worker(j) })
	}
}

// job is a request Go handed over, in flight.
type job struct {
	ctx     context.Context
	release func()
	m       *jsonrpc.Request
	out     Stream
}

// maxIdleWorkers bounds the workers a session keeps waiting for requests.
const maxIdleWorkers = 4

// worker runs a request, then waits for the next one while fewer than
// maxIdleWorkers wait. A goroutine that stays keeps the stack its last
// request grew: on a fresh one, argument validation alone (a recursive
// schema walk) grows and copies the stack on every call.
func (s *Session) worker(j job) {
	for {
		s.run(j.ctx, j.release, j.m, j.out)
		if s.idleWorkers.Add(1) > maxIdleWorkers {
			s.idleWorkers.Add(-1)
			return
		}
		select {
		case j = <-s.jobs:
			s.idleWorkers.Add(-1)
		case <-s.done:
			s.idleWorkers.Add(-1)
			return
		}
	}
}

// Handle handles one message from the client and returns when it is
// handled: a request's answer, and everything sent about the request
// before it, went to out. Notifications and answers to switchboard's own
// requests return at once.
func (s *Session) Handle(ctx context.Context, msg jsonrpc.Message, out Stream) {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		s.outbound.answered(m)
	case *jsonrpc.Request:
		if !m.IsCall() {
			s.notification(m)
			return
		}
		if rctx, release, ok := s.begin(ctx, m, out); ok {
			s.run(rctx, release, m, out)
		}
	}
}

// Drain waits until no request is in flight and every answer is written,
// or ctx is done.
func (s *Session) Drain(ctx context.Context) error {
	s.mu.Lock()
	if len(s.inflight) == 0 && s.answering == 0 {
		s.mu.Unlock()
		return nil
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel cancels the request in flight with the given ID, as
// notifications/cancelled does. Transports that see a cancellation before
// the request it names was handed over call it too.
func (s *Session) Cancel(id jsonrpc.ID) {
	s.mu.Lock()
	cancel := s.inflight[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *Session) notification(r *jsonrpc.Request) {
	switch r.Method {
	case "notifications/initialized":
		// Nothing waits for it: a session serves once initialize is answered.
		s.hook(s.opt.OnInitialized)
	case "notifications/cancelled":
		var p struct {
			ID any `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) != nil {
			return
		}
		if id, err := jsonrpc.MakeID(p.ID); err == nil {
			s.Cancel(id)
		}
	case "notifications/roots/list_changed":
		s.hook(s.opt.OnRootsChanged)
	default:
		s.log.Debug("notification ignored", "method", r.Method)
	}
}

// hook runs a callback of the Options (nil: none) for a notification from
// the client, not on the reader: the callback may ask the client.
func (s *Session) hook(f func(*Session)) {
	if f == nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		f(s)
	}()
}

// begin puts a request in flight: its context ends with the session or a
// cancellation. It answers a duplicate ID itself and refuses (false) once
// the session closed.
func (s *Session) begin(ctx context.Context, m *jsonrpc.Request, out Stream) (context.Context, func(), bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, false
	}
	if _, busy := s.inflight[m.ID]; busy {
		s.mu.Unlock()
		s.replyTo(out, m.ID, false, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("duplicate in-flight request ID %v", m.ID.Raw())})
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	s.inflight[m.ID] = cancel // Close cancels what is in flight
	s.wg.Add(1)
	s.mu.Unlock()
	return ctx, cancel, true
}

// run answers a request begin put in flight. The ID is free again before
// the answer goes out: a client may reuse it as soon as it has the answer.
func (s *Session) run(ctx context.Context, release func(), m *jsonrpc.Request, out Stream) {
	defer s.wg.Done()
	r := &Request{Session: s, ID: m.ID, Method: m.Method, Params: m.Params, Extra: m.Extra, out: out,
		ans: &answer{out: out, release: release}}
	var (
		res any
		err error
	)
	if e, merr := modernOf(m.Params, peekOf(m.Extra)); merr != nil {
		err = merr
	} else {
		r.era = e
		res, err = s.protocol.dispatch(ctx, r)
	}
	if !r.answer(res, err) && !errors.Is(err, ErrAnswered) {
		s.log.Debug("a result after the request's early answer dropped", "method", m.Method, "error", err)
	}
}

// answer is how a request is answered once: when its handler returns, or
// before (Request.AnswerEarly).
type answer struct {
	done    atomic.Bool
	out     Stream // the request's own stream (a detached copy writes elsewhere)
	release func() // ends the request's context and frees its slot
}

// answer writes r's answer unless it went out already, and reports
// whether it wrote it. The ID is free again, and the request's context
// ends, before the answer goes out.
func (r *Request) answer(res any, err error) bool {
	a := r.ans
	if !a.done.CompareAndSwap(false, true) {
		return false
	}
	s := r.Session
	s.mu.Lock()
	delete(s.inflight, r.ID)
	s.answering++
	s.mu.Unlock()
	a.release()
	// The answer is written even when the request was cancelled, with a
	// context that is not done, as JSON-RPC implementations do.
	s.reply(a.out, r, res, err)
	// Drain counts the request until its answer is out: a session closed
	// after Drain must not cut an answer being written.
	s.mu.Lock()
	s.answering--
	s.idleLocked()
	s.mu.Unlock()
	return true
}

// idleLocked wakes Drain when no request is in flight or being answered;
// s.mu held.
func (s *Session) idleLocked() {
	if len(s.inflight) == 0 && s.answering == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// reply writes a request's answer; a 2026-07-28 request's as that
// protocol has it.
func (s *Session) reply(out Stream, r *Request, res any, err error) {
	s.replyTo(out, r.ID, r.era != nil, res, err)
}

// replyTo writes the answer to request id (modern: of protocol 2026-07-28).
func (s *Session) replyTo(out Stream, id jsonrpc.ID, modern bool, res any, err error) {
	resp := &jsonrpc.Response{ID: id}
	if err == nil {
		if modern {
			s.protocol.modernResult(res)
		}
		raw, eerr := encode(res)
		if modern && eerr == nil {
			if raw == nil {
				raw = json.RawMessage("{}")
			}
			raw = completeType(raw)
		}
		if eerr != nil {
			s.log.Error("encode result", "error", eerr)
			err = eerr
		} else {
			if raw == nil {
				raw = json.RawMessage("{}")
			}
			resp.Result = raw
		}
	}
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			if !errors.Is(err, context.Canceled) {
				s.log.Error("internal error", "error", err, "session_id", s.opt.ID)
			}
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
		if modern {
			we = modernError(we)
		}
		resp.Error = we
	}
	if werr := out.Write(context.WithoutCancel(s.ctx), resp); werr != nil {
		s.log.Debug("answer not delivered", "error", werr, "session_id", s.opt.ID)
	}
}

// encode is params or a result as JSON; a json.RawMessage as it is.
// The go-sdk's results with a MarshalJSON of their own (which encodes with
// json.Marshal, so its output is compact and HTML-escaped as json.Marshal's)
// are encoded by it directly: json.Marshal would call it and then compact
// its output again, a second pass over every byte of the answer.
func encode(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	case *mcp.CallToolResult:
		if v != nil {
			return v.MarshalJSON()
		}
	case *mcp.GetPromptResult:
		if v != nil {
			return v.MarshalJSON()
		}
	case *mcp.ReadResourceResult:
		if v != nil {
			return v.MarshalJSON()
		}
	}
	return json.Marshal(v)
}
