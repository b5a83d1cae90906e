package mrtr

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// Multi-round-trip requests (SEP-2322) for a 2026-07-28 client in front of
// a legacy upstream. A legacy server asks for input (sampling, elicitation,
// roots) with a request to the client in the middle of a call; a
// 2026-07-28 client cannot take such a request. So the call is parked: it
// keeps running, its request to the client is answered with an
// input_required result naming the input, and the client's retry (the same
// request with inputResponses and the requestState switchboard issued)
// brings the answer back to the waiting call, which goes on to its next
// question or its result. Any number of rounds, and several questions in
// one round when the server asks them at once.
//
// The requestState is switchboard's: a random ID of the parked call and the
// round, with an HMAC (a key per process, or requestStateKey's) over them,
// the caller and what the call is about, so a state cannot be forged,
// altered, replayed from an earlier round or taken to another caller. A
// round the client never answers ends with the ask's own bound (five
// minutes), which fails the upstream's request and so the call. What the
// call reports meanwhile goes to the request of it that is current, under
// the first request's progress token.

// maxParked bounds the calls waiting for input at once; more are refused.
const maxParked = 1024

// Calls are the calls of 2026-07-28 requests that asked for input.
type Calls struct {
	own []byte                 // HMAC key of requestState made by this process
	key atomic.Pointer[[]byte] // the one in use: own, or requestStateKey's

	mu       sync.Mutex
	calls    map[string]*parkedCall
	stopping bool // no request can bring a retry any more (stopAsking)

	// A call runs on the goroutine of the request that started it, which
	// its transport waits for; done ends every call (close).
	done   context.Context
	finish context.CancelFunc
}

func New() *Calls {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	pc := &Calls{own: key, calls: map[string]*parkedCall{}}
	pc.key.Store(&key)
	pc.done, pc.finish = context.WithCancel(context.Background())
	return pc
}

// close cancels the calls still running. It is safe to call again and
// concurrently.
func (cs *Calls) Close() { cs.finish() }

// stopAsking is for a shutdown that refuses new requests: no retry can
// continue a call any more. The calls that wait for one are cancelled,
// and a call that asks from now on is refused (its upstream is told).
// Those a retry is waiting on run on.
func (cs *Calls) StopAsking() {
	cs.mu.Lock()
	cs.stopping = true
	var idle []*parkedCall
	for _, c := range cs.calls {
		if c.waiters.Load() == 0 {
			idle = append(idle, c)
		}
	}
	cs.mu.Unlock()
	for _, c := range idle {
		c.cancel()
	}
}

// parkedCall is one call running for a 2026-07-28 client.
type parkedCall struct {
	pc     *Calls
	from   *binding // the request that started it, for its binding
	cancel context.CancelFunc
	relay  relay // the stream of the request currently waiting
	// waiters counts the retries waiting for the call (wait).
	waiters atomic.Int32

	mu sync.Mutex
	// first is the request that started the call while it waits for its
	// answer: the call's result, or its first question.
	first *session.Request
	stops []func() bool // of what park registered
	ended bool          // the call returned
	// id and what follows are set when the call first asks for input
	// (register): a call that never does is in no list and needs none.
	id      string
	bind    string               // what the state is bound to: caller and call
	asks    chan *inputAsk       // its requests to the client, after the first
	done    chan struct{}        // closed when the call ended
	res     any                  // its answer, once done
	err     error                // (or error)
	pending map[string]*inputAsk // handed to the client, by input key
	next    int                  // numbers input keys
	round   int                  // rounds of questions so far; each has its own state
}

// inputAsk is one request of the call to the client, waiting for its answer.
type inputAsk struct {
	method string
	params json.RawMessage
	reply  chan json.RawMessage // the client's answer
}

// relay is a session.Stream that writes to the stream of whichever
// request of the call is current.
type relay struct {
	cur atomic.Pointer[session.Request]
}

func (r *relay) Write(ctx context.Context, msg jsonrpc.Message) error {
	req := r.cur.Load()
	if req == nil {
		return session.ErrNoStream
	}
	return req.Stream().Write(ctx, msg)
}

// Wrap wraps the handler of a method that may ask for input
// (tools/call, prompts/get, resources/read). A 2026-07-28 request runs as a
// parked call, or resumes the one its requestState names; an upstream's
// own input_required passes through with its state sealed. A legacy
// request whose upstream (of 2026-07-28) asks for input gets the questions
// asked of its client, and the call retried with the answers, round after
// round.
func (cs *Calls) Wrap(method string, next session.Handler) session.Handler {
	return func(ctx context.Context, r *session.Request) (any, error) {
		if !r.Modern() {
			return inputLoop(ctx, r, next)
		}
		rt, err := retryParams(r.Params, r.Peek())
		if err != nil {
			return nil, err
		}
		bind := &binding{r: r, method: method}
		var res any
		switch {
		case rt.State == "":
			// Answers without a state go to the server as they are: a
			// 2026-07-28 server may take them, a legacy one ignores them.
			res, err = cs.call(ctx, r, bind, next)
		case strings.HasPrefix(rt.State, upstreamPrefix):
			up, ok := cs.openUpstream(rt.State, bind.String())
			if !ok {
				return nil, badState
			}
			res, err = cs.call(ctx, withRetry(r, up, nil), bind, next)
		default:
			var pc *parkedCall
			if pc, err = cs.resume(rt, bind.String()); err != nil {
				return nil, err
			}
			res, err = cs.wait(ctx, pc, r)
		}
		if err == nil {
			cs.sealUpstream(res, bind)
		}
		return res, err
	}
}

// maxInputRounds bounds the rounds of input switchboard runs for a legacy
// client, as SDK clients bound theirs.
const maxInputRounds = 10

// inputLoop answers a legacy request: an input_required result of a
// 2026-07-28 upstream is answered by asking the client (with real
// requests), and the call retried with the answers and the upstream's
// state.
func inputLoop(ctx context.Context, r *session.Request, next session.Handler) (any, error) {
	res, err := next(ctx, r)
	for round := 1; err == nil; round++ {
		inputs, state, ok := inputsOf(res)
		if !ok {
			return res, nil
		}
		if round > maxInputRounds {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the server asked for input more than %d times in one call", maxInputRounds)}
		}
		answers := make(map[string]json.RawMessage, len(inputs))
		for key, in := range inputs {
			a, aerr := askInput(ctx, r, in)
			if aerr != nil {
				return nil, aerr
			}
			answers[key] = a
		}
		res, err = next(ctx, withRetry(r, state, answers))
	}
	return res, err
}

// inputsOf reports a result that asks for input: its questions and state.
func inputsOf(res any) (mcp.InputRequestMap, string, bool) {
	switch v := res.(type) {
	case *mcp.CallToolResult:
		return v.InputRequests, v.RequestState, v != nil && v.NeedsInput()
	case *mcp.GetPromptResult:
		return v.InputRequests, v.RequestState, v != nil && v.NeedsInput()
	case *mcp.ReadResourceResult:
		return v.InputRequests, v.RequestState, v != nil && v.NeedsInput()
	}
	return nil, "", false
}

// askInput asks a legacy client one question of an upstream (already
// through the trust boundary), if it declared it can answer.
func askInput(ctx context.Context, r *session.Request, in mcp.InputRequest) (json.RawMessage, error) {
	caps := r.ClientCapabilities()
	var method string
	switch p := in.(type) {
	case *mcp.ElicitParams:
		method = "elicitation/create"
		if caps == nil || caps.Elicitation == nil {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "the server asks for elicitation, which the client did not declare"}
		}
		if mode := session.ElicitMode(p); !session.CanElicit(caps, mode) {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "the server asks for " + mode + "-mode elicitation, which the client did not declare"}
		}
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		method = "sampling/createMessage"
		if caps == nil || caps.Sampling == nil {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "the server asks for sampling, which the client did not declare"}
		}
	case *mcp.ListRootsParams:
		method = "roots/list"
		if caps == nil || caps.RootsV2 == nil {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "the server asks for roots, which the client did not declare"}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the server asks for input of an unknown kind (%T)", in)}
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return r.Ask(rctx, method, in)
}

// withRetry is r retried: its params' requestState (none if "") and, when
// answers is not nil, inputResponses replaced.
func withRetry(r *session.Request, state string, answers map[string]json.RawMessage) *session.Request {
	var params map[string]json.RawMessage
	if json.Unmarshal(r.Params, &params) != nil || params == nil {
		params = map[string]json.RawMessage{}
	}
	delete(params, "requestState")
	if state != "" {
		params["requestState"], _ = json.Marshal(state)
	}
	if answers != nil {
		params["inputResponses"], _ = json.Marshal(answers)
	}
	cp := *r
	cp.Params, _ = json.Marshal(params)
	return &cp
}

// call runs a new call for r on r's goroutine, and answers r with its
// result. If the call asks for input first, r is answered then, with
// input_required (ask), and the call goes on here until a retry takes its
// result: the handler then returns session.ErrAnswered. Most calls never
// ask, and pay no hand-off to another goroutine.
func (cs *Calls) call(ctx context.Context, r *session.Request, from *binding, next session.Handler) (any, error) {
	c := &parkedCall{pc: cs, from: from, first: r}
	c.relay.cur.Store(r)
	// The call keeps the request's values (the principal, the trace), not
	// its end: it ends with its own cancel, once r was answered early.
	// Before that, a client that leaves (a 2026-07-28 client cancels by
	// closing the request's stream) cancels it.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	stop := context.AfterFunc(ctx, func() {
		if c.takeFirst() != nil {
			cancel()
		}
	})
	res, err := next(cctx, r.Detach(&c.relay, c.ask))
	stop()
	cancel()
	first := c.takeFirst()
	c.mu.Lock()
	c.ended = true
	id, done, stops := c.id, c.done, c.stops
	c.res, c.err = res, err
	c.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	if id != "" {
		cs.mu.Lock()
		delete(cs.calls, id)
		cs.mu.Unlock()
		close(done)
	}
	if first == nil {
		return nil, session.ErrAnswered // a retry waits for the result
	}
	return res, err
}

// park makes a call answered early (r is the request that started it)
// end with the Calls and with r's session: a stdio session's close
// waits for its handlers, and a stateless session closes after its call
// anyway. A call that never asks registers with neither: pc.done is
// every call's, so that would lock one mutex on every call.
func (c *parkedCall) park(r *session.Request) {
	stops := []func() bool{context.AfterFunc(c.pc.done, c.cancel), context.AfterFunc(r.Session.Context(), c.cancel)}
	c.mu.Lock()
	ended := c.ended
	if !ended {
		c.stops = stops
	}
	c.mu.Unlock()
	if ended {
		for _, stop := range stops {
			stop()
		}
	}
}

// takeFirst returns the request that started the call and is still
// waiting for its answer, which is now the taker's to give (nil: it has
// its answer, or is being given it).
func (c *parkedCall) takeFirst() *session.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.first
	c.first = nil
	return r
}

// register gives the call its ID and puts it in the list of calls a
// retry can continue, when it first asks for input.
func (c *parkedCall) register() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pc := c.pc
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.stopping {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "switchboard is shutting down: the client cannot be asked for input"}
	}
	if c.id != "" {
		return nil
	}
	if len(pc.calls) >= maxParked {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many calls waiting for input (limit %d); retry later", maxParked)}
	}
	// Not from.String(): the request's goroutine may be using from.
	c.id, c.bind = rand.Text(), bindingOf(c.from.r, c.from.method)
	c.asks, c.done, c.pending = make(chan *inputAsk, 8), make(chan struct{}), map[string]*inputAsk{}
	pc.calls[c.id] = c
	return nil
}

// ask is the call's way to the client: its request goes out with the next
// input_required answer, and it waits for the retry that answers it. The
// first question answers the request that started the call, from here.
func (c *parkedCall) ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := c.register(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	a := &inputAsk{method: method, params: raw, reply: make(chan json.RawMessage, 1)}
	if first := c.takeFirst(); first != nil {
		c.park(first)
		res, err := c.pc.inputRequired(c, []*inputAsk{a})
		first.AnswerEarly(res, err)
	} else {
		select {
		case c.asks <- a:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case raw := <-a.reply:
		return raw, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// resume finds the call a retry's state names and hands it the answers.
func (cs *Calls) resume(rt retry, bind string) (*parkedCall, error) {
	id, round, ok := cs.open(rt.State, bind)
	if !ok {
		return nil, badState
	}
	cs.mu.Lock()
	c := cs.calls[id]
	cs.mu.Unlock()
	if c == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the call this requestState continues has ended (its input came too late); call again"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if round != c.round {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestState is of round %d of this call, which is at round %d", round, c.round)}
	}
	for key, raw := range rt.Responses {
		if a := c.pending[key]; a != nil {
			delete(c.pending, key)
			a.reply <- raw
		}
	}
	return c, nil
}

// wait answers r for the call: with its result, or with input_required
// naming what it asks (those of a round not answered yet first).
func (cs *Calls) wait(ctx context.Context, c *parkedCall, r *session.Request) (any, error) {
	c.waiters.Add(1)
	defer c.waiters.Add(-1)
	c.relay.cur.Store(r)
	c.mu.Lock()
	unanswered := len(c.pending) > 0
	c.mu.Unlock()
	if unanswered {
		// The client left some questions out: they are asked again.
		return cs.inputRequired(c, nil)
	}
	select {
	case a := <-c.asks:
		asks := []*inputAsk{a}
		for more := true; more; {
			select {
			case a := <-c.asks:
				asks = append(asks, a)
			default:
				more = false
			}
		}
		return cs.inputRequired(c, asks)
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		// A 2026-07-28 client cancels by closing the request's stream.
		c.cancel()
		<-c.done
		return nil, ctx.Err()
	}
}

// inputRequired is the answer naming the call's open questions, with the
// state that continues it.
func (cs *Calls) inputRequired(c *parkedCall, asks []*inputAsk) (json.RawMessage, error) {
	c.mu.Lock()
	if len(asks) > 0 {
		c.round++ // new questions: a new state, and the old one is spent
	}
	for _, a := range asks {
		c.next++
		c.pending[fmt.Sprintf("%s-%d", inputKind(a.method), c.next)] = a
	}
	round := c.round
	reqs := make(map[string]json.RawMessage, len(c.pending))
	for key, a := range c.pending {
		reqs[key], _ = json.Marshal(struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params,omitempty"`
		}{a.method, a.params})
	}
	id, bind := c.id, c.bind // set by register before the call's first question
	c.mu.Unlock()
	return json.Marshal(struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}{"input_required", reqs, cs.seal(id, round, bind)})
}

// inputKind names an input key after what it asks.
func inputKind(method string) string {
	switch method {
	case "elicitation/create":
		return "elicitation"
	case "sampling/createMessage":
		return "sampling"
	case "roots/list":
		return "roots"
	}
	return "input"
}
