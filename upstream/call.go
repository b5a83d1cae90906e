package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// ErrUnavailable is wrapped by every error that means the server could not
// take the call (down, restarting, breaker open, timed out, transport failure).
var ErrUnavailable = errors.New("upstream unavailable")

// UnavailableError says why a server could not take a call and when to retry.
type UnavailableError struct {
	Server  string
	State   State
	Reason  string        // short cause, redacted by the caller before it leaves the process
	RetryIn time.Duration // 0 when unknown
	Breaker bool          // the circuit breaker refused the call; RetryIn is when it probes
	// Unreachable marks a remote server whose connection is down: a call's
	// transport failed, or switchboard is reconnecting. RetryIn is when a
	// call may find it back.
	Unreachable bool
	// Consent marks a server whose OAuth token cannot be had without a
	// person's consent (none given yet, or its refresh token revoked):
	// the error says to run `switchboard auth login`.
	Consent bool
	// InBand: the consent was asked of the call's caller (oauth.Asking).
	InBand bool
}

func (e *UnavailableError) Error() string {
	if e.InBand {
		return fmt.Sprintf("server '%s' needs a person's consent: open the URL switchboard sent, then retry", e.Server)
	}
	if e.Consent {
		return fmt.Sprintf("server '%s' needs a person's consent: run `switchboard auth login %s`", e.Server, e.Server)
	}
	if e.Unreachable {
		return fmt.Sprintf("server '%s' is unreachable, retrying in ~%ds", e.Server, wholeSeconds(e.RetryIn))
	}
	var b strings.Builder
	switch e.State {
	case StateRestarting:
		fmt.Fprintf(&b, "server '%s' is restarting", e.Server)
	case StateFailed:
		fmt.Fprintf(&b, "server '%s' failed", e.Server)
	case "":
		fmt.Fprintf(&b, "server '%s' is unavailable", e.Server)
	default:
		fmt.Fprintf(&b, "server '%s' is %s", e.Server, e.State)
	}
	if e.Reason != "" && e.State != StateRestarting {
		b.WriteString(": " + e.Reason)
	}
	next := "next attempt"
	if e.Breaker {
		next = "next probe"
	}
	switch {
	case e.RetryIn > 0:
		fmt.Fprintf(&b, ", %s in ~%ds", next, wholeSeconds(e.RetryIn))
	case e.State == StateRestarting:
		b.WriteString(", reconnecting now")
	}
	return b.String()
}

// wholeSeconds rounds d to whole seconds, at least 1.
func wholeSeconds(d time.Duration) int {
	return max(1, int(d.Round(time.Second)/time.Second))
}

func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// TimeoutError is a call that outlived toolTimeout. The upstream was sent a
// cancellation.
type TimeoutError struct {
	Server string
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Tool call timed out after %dms", e.After.Milliseconds())
}

func (e *TimeoutError) Unwrap() error { return ErrUnavailable }

// errCallerGone marks a call whose downstream caller went away, or that the
// Handle's Close cut short; the breaker excludes it.
var errCallerGone = errors.New("caller went away")

// answer returns the JSON-RPC error a server answered with, if err is one.
// A transport failure never is, even if what it wraps looks like one (the
// go-sdk's transports wrap some of theirs in a -32005 error).
func answer(err error) (*jsonrpc.Error, bool) {
	if err == nil {
		return nil, false // before we, which escapes: most calls succeed
	}
	var we *jsonrpc.Error
	if errors.Is(err, ErrConnectionClosed) || errors.Is(err, mcp.ErrConnectionClosed) || !errors.As(err, &we) {
		return nil, false
	}
	return we, true
}

// calls forwards requests to the live session: it starts a lazy server or
// waits for a start in progress, or fails fast; it counts each call in
// flight (gate), bounds it by its timeout, runs it through the breaker, and
// tells what a failure means (a timeout, a lost connection, an unreachable
// server).
type calls struct {
	spec *atomic.Pointer[Spec] // the Handle's
	log  hclog.Logger
	life *lifetime
	sess *sessionSlot
	sup  *supervisor

	gate gate // the calls in flight
	brk  breaker
}

// sp is the current spec.
func (cs *calls) sp() *Spec { return cs.spec.Load() }

// usable returns the session to call, or nil: none is published, or a
// remote one whose connection a call saw break (the supervisor is about to
// reconnect).
func (cs *calls) usable() *session {
	s := cs.sess.load()
	if s == nil || s.proc == nil && s.isLost() {
		return nil
	}
	return s
}

// live returns the ready session, starting a lazy server or waiting for a
// first start in progress; otherwise it fails fast with an UnavailableError.
//
// The wait is exact: each round takes the channels that announce the next
// state change and the next published session before it looks at the
// session, so whatever happens after the look wakes it. The supervisor
// stores a session before it enters StateReady, and every withdrawal of
// the session (an idle stop, the session's end) is followed by a state
// change, so a server that is ready without a usable session is one whose
// state is about to change.
func (cs *calls) live(ctx context.Context) (*session, error) {
	if s := cs.usable(); s != nil {
		return s, nil
	}
	if s := cs.sess.load(); s != nil && cs.sp().remote() {
		cs.sup.wantAttempt()
		u := cs.sup.unreachable()
		// A call that lost the session may have seen why before the
		// supervisor took the loss in: a consent the server needs is
		// said from the next call on, not once the supervisor noted it.
		u.Consent = u.Consent || s.lostForConsent()
		return nil, u
	}
	if cs.gate.closed() {
		return nil, &UnavailableError{Server: cs.sp().Name, State: StateStopped}
	}
	cs.sup.ensureStarted()
	deadline := time.NewTimer(cs.sp().connectTimeout())
	defer deadline.Stop()
	for {
		st, changed, next, last := cs.sup.watch()
		published := cs.sess.next()
		if s := cs.usable(); s != nil {
			return s, nil
		}
		switch st {
		case StateIdle, StateStarting:
			if st == StateIdle {
				// It went idle meanwhile: a lazy server whose idle
				// stop this call just missed.
				cs.sup.ensureStarted()
			}
			select {
			case <-changed:
			case <-published:
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %w", errCallerGone, ctx.Err())
			case <-deadline.C:
				return nil, &UnavailableError{Server: cs.sp().Name, State: st, Reason: "still starting"}
			}
		case StateReady:
			// The session was withdrawn (an idle stop, or its end) or,
			// for a remote server, lost; the state changes next.
			select {
			case <-changed:
			case <-published:
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %w", errCallerGone, ctx.Err())
			}
		case StateRestarting:
			if cs.sp().remote() {
				cs.sup.wantAttempt()
				return nil, cs.sup.unreachable()
			}
			return nil, &UnavailableError{Server: cs.sp().Name, State: st, RetryIn: time.Until(next)}
		case StateFailed:
			var retry time.Duration
			if !next.IsZero() {
				retry = time.Until(next)
				if cs.sp().remote() {
					// Retried slowly; a call may ask for an attempt
					// sooner. One that failed for good is not retried.
					cs.sup.wantAttempt()
					retry = min(retry, time.Until(cs.sup.earliestAttempt()))
				}
			}
			return nil, &UnavailableError{Server: cs.sp().Name, State: st, Reason: last, RetryIn: retry, Consent: needsConsent(last)}
		default:
			return nil, &UnavailableError{Server: cs.sp().Name, State: st}
		}
	}
}

// do runs one request against the live session, with the in-flight count,
// the timeout and the breaker. Timeouts and transport failures count against
// the breaker, and so does a call refused because a remote server is
// unreachable; answers (even errors) and callers going away do not.
func (cs *calls) do(ctx context.Context, timeout time.Duration, fn func(context.Context, *session) (json.RawMessage, error)) (json.RawMessage, error) {
	if oauth.Asks(ctx) {
		oauth.Reconnecting(ctx, cs.reconnect)
	}
	s, err := cs.acquireLive(ctx)
	if err != nil {
		var ue *UnavailableError
		if errors.As(err, &ue) && ue.Consent && consentAsked(cs.sup.conn.askConsent(ctx)) {
			// Down for want of a consent its caller was now asked for.
			return nil, cs.askedInBand()
		}
		return nil, err
	}
	defer cs.gate.leave()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Calls still running when Close gave up draining are cancelled, so the
	// upstream hears of it and the session can close.
	defer context.AfterFunc(cs.life.ctx, cancel)()
	res, err := cs.brk.execute(func() (any, error) {
		r, err := fn(cctx, s)
		if _, ok := answer(err); err == nil || ok {
			s.answered.Store(true)
		}
		if err != nil && (ctx.Err() != nil || cs.life.ctx.Err() != nil) {
			return r, fmt.Errorf("%w: %w", errCallerGone, err)
		}
		return r, err
	})
	if err == nil {
		return res.(json.RawMessage), nil
	}
	return nil, cs.callError(ctx, cctx, s, timeout, err)
}

// askedInBand is the error of a call refused for a consent its caller was
// asked for (oauth.Asking).
func (cs *calls) askedInBand() *UnavailableError {
	return &UnavailableError{Server: cs.sp().Name, Consent: true, InBand: true}
}

// reconnect asks a server whose connection is down for an attempt now and
// waits, up to reconnectWait, for a session: a consent given in band is
// told to its caller once the call made again can find the server.
func (cs *calls) reconnect() {
	deadline := time.NewTimer(reconnectWait)
	defer deadline.Stop()
	for {
		published := cs.sess.next()
		if cs.usable() != nil {
			return
		}
		cs.sup.wantAttempt()
		select {
		case <-published:
		case <-deadline.C:
			return
		case <-cs.life.ctx.Done():
			return
		}
	}
}

// reconnectWait bounds reconnect.
const reconnectWait = 10 * time.Second

// acquireLive returns the live session with the call counted in flight.
// The count comes before a second look at the session: a lazy server's
// idle stop (idleStop) decides and withdraws the session under the gate's
// lock, so either the call entered first and the stop does not happen, or
// the call finds the session withdrawn and waits for the next start.
func (cs *calls) acquireLive(ctx context.Context) (*session, error) {
	for {
		s, err := cs.live(ctx)
		if err != nil {
			var ue *UnavailableError
			if errors.As(err, &ue) && ue.Unreachable {
				cs.brk.countFailure(err)
			}
			return nil, err
		}
		if !cs.gate.enter() {
			return nil, &UnavailableError{Server: cs.sp().Name, State: StateStopped}
		}
		if cs.sess.load() == s {
			return s, nil
		}
		cs.gate.leave()
	}
}

// callError turns the error of a call that reached the breaker into what
// the caller gets.
func (cs *calls) callError(ctx, cctx context.Context, s *session, timeout time.Duration, err error) error {
	if refused := cs.brk.refusal(cs.sp(), err); refused != nil {
		return refused
	}
	switch {
	case errors.Is(err, errCallerGone):
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &UnavailableError{Server: cs.sp().Name, Reason: "switchboard stopped it during the call"}
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		cs.checkAfterTimeout(s)
		return &TimeoutError{Server: cs.sp().Name, After: timeout}
	}
	if we, ok := answer(err); ok {
		return we
	}
	if why := callerRefusal(err); why != "" {
		// This caller's token could not be had: the session is fine.
		return &UnavailableError{Server: cs.sp().Name, Reason: why}
	}
	if consentAsked(err) {
		// The caller was sent the consent's URL (oauth.Asking): the
		// session is fine, and so is the server.
		return cs.askedInBand()
	}
	if why := tokenRefusal(err); why != "" {
		// No token could be had for the server: the session is fine, and
		// the next call runs the grant's flow again.
		return &UnavailableError{Server: cs.sp().Name, Reason: why}
	}
	if cs.connectionLost(s, err) {
		s.markLost(err)
		if s.proc == nil {
			cs.sup.wantAttempt()
			u := cs.sup.unreachable()
			u.Consent = needsConsent(err.Error()) // this call's cause, not an earlier one
			return u
		}
		return &UnavailableError{Server: cs.sp().Name, Reason: "connection lost during the call; it restarts"}
	}
	return &UnavailableError{Server: cs.sp().Name, Reason: err.Error()}
}

// checkAfterTimeout asks, in the background, whether a session whose call
// timed out still answers at all: a server wedged mid-line (or stuck in a
// loop) answers no ping, and its session is ended so the supervisor
// restarts it. One check per session runs at a time.
func (cs *calls) checkAfterTimeout(s *session) {
	if !s.checking.CompareAndSwap(false, true) {
		return
	}
	cs.life.wg.Go(func() {
		defer s.checking.Store(false)
		if !cs.responsive(s) && cs.life.ctx.Err() == nil {
			cs.log.Warn("upstream unresponsive", "reason", "a call timed out and a ping got no answer", "duration", healthCheckTimeout)
			s.unresponsive.Store(true)
			s.markLost(errUnresponsive)
		}
	})
}

// errUnresponsive ends a session whose call timed out and whose ping got
// no answer.
var errUnresponsive = errors.New("a call timed out and a ping got no answer")

// healthCheckTimeout bounds the ping that tells a slow server from a dead
// one.
const healthCheckTimeout = 2 * time.Second

// responsive pings a session after a call failed without an answer. A stdio
// connection has no transient failures: if a ping fails too, the connection
// is broken, even if the error does not say so.
func (cs *calls) responsive(s *session) bool {
	ctx, cancel := context.WithTimeout(cs.life.ctx, healthCheckTimeout)
	defer cancel()
	_, err := s.cl.call(ctx, "ping", nil, nil)
	_, answered := answer(err)
	return err == nil || answered
}

// connectionLost reports whether a call failed because the session ended
// under it: the connection closed or could not send (for a remote server:
// connection refused or reset, an HTTP error status), the HTTP session
// vanished, or, for a child process, the pipe broke or the child stopped
// answering even pings. A remote request's stream that broke before the
// answer is not enough on its own: the session may well survive it, so a
// ping decides.
func (cs *calls) connectionLost(s *session, err error) bool {
	if errors.Is(err, ErrConnectionClosed) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) {
		return true
	}
	if s.proc == nil {
		return errors.Is(err, errStreamLost) && !cs.responsive(s)
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || !cs.responsive(s)
}

// Call forwards one request to the server and returns its raw result, with
// the in-flight count, the call timeout and the circuit breaker. The
// caller's context reaches the server: a downstream cancel cancels the
// upstream request. What the server sends about the request reaches sink,
// in order, before Call returns (see Sink); with a nil sink it is dropped,
// and server requests about the call are refused. A progressToken in the
// params' _meta (any value) asks for progress under a token the connection
// mints, which Call writes into params. A JSON-RPC error answer is returned
// as *jsonrpc.Error.
func (h *Handle) Call(ctx context.Context, method string, params mcp.Params, sink Sink) (json.RawMessage, error) {
	return h.calls.do(ctx, h.sp().callTimeout(), func(ctx context.Context, s *session) (json.RawMessage, error) {
		return s.cl.call(ctx, method, params, sink)
	})
}

// CallTool forwards one tools/call and decodes its result.
func (h *Handle) CallTool(ctx context.Context, p *mcp.CallToolParams, sink Sink) (*mcp.CallToolResult, error) {
	if p.Arguments == nil {
		p.Arguments = map[string]any{} // never send a null
	}
	if cat := h.cat.load(); cat != nil && cat.params[p.Name] != nil {
		ctx = context.WithValue(ctx, paramHeadersKey{}, cat.params[p.Name])
	}
	raw, err := h.Call(ctx, "tools/call", p, sink)
	if err != nil {
		return nil, err
	}
	return decodeToolResult(raw)
}

// GetPrompt forwards one prompts/get.
func (h *Handle) GetPrompt(ctx context.Context, p *mcp.GetPromptParams, sink Sink) (*mcp.GetPromptResult, error) {
	return callAs[mcp.GetPromptResult](h, ctx, "prompts/get", p, sink)
}

// ReadResource forwards one resources/read.
func (h *Handle) ReadResource(ctx context.Context, p *mcp.ReadResourceParams, sink Sink) (*mcp.ReadResourceResult, error) {
	return callAs[mcp.ReadResourceResult](h, ctx, "resources/read", p, sink)
}

// Complete forwards one completion/complete.
func (h *Handle) Complete(ctx context.Context, p *mcp.CompleteParams, sink Sink) (*mcp.CompleteResult, error) {
	return callAs[mcp.CompleteResult](h, ctx, "completion/complete", p, sink)
}

func callAs[R any](h *Handle, ctx context.Context, method string, p mcp.Params, sink Sink) (*R, error) {
	raw, err := h.Call(ctx, method, p, sink)
	if err != nil {
		return nil, err
	}
	r := new(R)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("%s: decode the result: %w", method, err)
	}
	return r, nil
}

// decodeToolResult decodes a tools/call result, text-only ones in one pass.
func decodeToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if res := decodeTextResult(raw); res != nil {
		return res, nil
	}
	if bytes.Contains(raw, []byte(`"task"`)) {
		var rt struct {
			ResultType string `json:"resultType"`
		}
		if json.Unmarshal(raw, &rt) == nil && rt.ResultType == "task" {
			return nil, &TaskCreated{Result: raw}
		}
	}
	res := new(mcp.CallToolResult)
	if err := res.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("tools/call: decode the result: %w", err)
	}
	return res, nil
}

// TaskCreated is CallTool's answer when the server did not return the
// tool's result but created a task that will (a CreateTaskResult,
// resultType "task": the tasks extension, SEP-2663). Result is the
// server's answer as it sent it, not yet through any trust boundary.
type TaskCreated struct {
	Result json.RawMessage
}

func (*TaskCreated) Error() string { return "the server created a task instead of answering the call" }
