package proxy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

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

// b64 decodes requestState parts strictly: an encoding is refused unless
// it is the one switchboard wrote, so no two states open to one.
var b64 = base64.RawURLEncoding.Strict()

// maxParked bounds the calls waiting for input at once; more are refused.
const maxParked = 1024

// parkedCalls are the calls of 2026-07-28 requests that asked for input.
type parkedCalls struct {
	own []byte                 // HMAC key of requestState made by this process
	key atomic.Pointer[[]byte] // the one in use: own, or requestStateKey's

	mu    sync.Mutex
	calls map[string]*parkedCall

	// The calls' goroutines are the parkedCalls': close cancels them all
	// and waits for them. A goroutine that ran a call waits for the next
	// one while fewer than maxIdleRunners wait (see runner).
	wg     sync.WaitGroup
	jobs   chan func() // calls for idle runners (unbuffered)
	idle   atomic.Int32
	done   context.Context
	finish context.CancelFunc
}

func newParkedCalls() *parkedCalls {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	pc := &parkedCalls{own: key, calls: map[string]*parkedCall{}, jobs: make(chan func())}
	pc.key.Store(&key)
	pc.done, pc.finish = context.WithCancel(context.Background())
	return pc
}

// close cancels the calls still running and waits for them. It is safe to
// call again and concurrently.
func (pc *parkedCalls) close() {
	pc.finish()
	pc.wg.Wait()
}

// useKey keys requestStates with secret (requestStateKey, resolved; ""
// the process's own key). A state issued under another key no longer
// opens.
func (pc *parkedCalls) useKey(secret string) {
	if secret == "" {
		pc.key.Store(&pc.own)
		return
	}
	sum := sha256.Sum256([]byte(secret))
	key := sum[:]
	pc.key.Store(&key)
}

// parkedCall is one call running for a 2026-07-28 client.
type parkedCall struct {
	pc     *parkedCalls
	from   *binding       // the request that started it, for its binding
	asks   chan *inputAsk // the call's requests to the client
	done   chan struct{}  // closed when the call ended
	res    any            // its answer, once done
	err    error          // (or error)
	cancel context.CancelFunc
	relay  relay // the stream of the request currently waiting

	mu sync.Mutex
	// id and bind are set when the call first asks for input (register):
	// a call that never does is in no list and needs neither.
	id      string
	bind    string               // what the state is bound to: caller and call
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

// resumable wraps the handler of a method that may ask for input
// (tools/call, prompts/get, resources/read). A 2026-07-28 request runs as a
// parked call, or resumes the one its requestState names; an upstream's
// own input_required passes through with its state sealed. A legacy
// request whose upstream (of 2026-07-28) asks for input gets the questions
// asked of its client, and the call retried with the answers, round after
// round.
func (p *Proxy) resumable(method string, next session.Handler) session.Handler {
	return func(ctx context.Context, r *session.Request) (any, error) {
		if !r.Modern() {
			return p.inputLoop(ctx, r, next)
		}
		rt, err := retryParams(r.Params)
		if err != nil {
			return nil, err
		}
		bind := &binding{r: r, method: method}
		var pc *parkedCall
		switch {
		case rt.State == "":
			// Answers without a state go to the server as they are: a
			// 2026-07-28 server may take them, a legacy one ignores them.
			pc = p.parked.start(ctx, r, bind, next)
		case strings.HasPrefix(rt.State, upstreamPrefix):
			up, ok := p.parked.openUpstream(rt.State, bind.String())
			if !ok {
				return nil, badState
			}
			pc = p.parked.start(ctx, withRetry(r, up, nil), bind, next)
		default:
			pc, err = p.parked.resume(rt, bind.String())
		}
		if err != nil {
			return nil, err
		}
		res, err := p.parked.wait(ctx, pc, r)
		if err == nil {
			p.parked.sealUpstream(res, bind)
		}
		return res, err
	}
}

// badState refuses a requestState switchboard did not issue for the
// request.
var badState = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not one switchboard issued for this request"}

// maxInputRounds bounds the rounds of input switchboard runs for a legacy
// client, as SDK clients bound theirs.
const maxInputRounds = 10

// inputLoop answers a legacy request: an input_required result of a
// 2026-07-28 upstream is answered by asking the client (with real
// requests), and the call retried with the answers and the upstream's
// state.
func (p *Proxy) inputLoop(ctx context.Context, r *session.Request, next session.Handler) (any, error) {
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
	switch in.(type) {
	case *mcp.ElicitParams:
		method = "elicitation/create"
		if caps == nil || caps.Elicitation == nil {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "the server asks for elicitation, which the client did not declare"}
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

// upstreamPrefix starts a sealed upstream state; parkedPrefix a parked
// call's.
const (
	upstreamPrefix = "u."
	parkedPrefix   = "p."
)

// sealUpstream seals the state of an upstream's input_required result, so
// that only the caller it went to can continue it, unaltered.
func (pc *parkedCalls) sealUpstream(res any, bind *binding) {
	_, state, ok := inputsOf(res)
	if !ok {
		return
	}
	head := upstreamPrefix + base64.RawURLEncoding.EncodeToString([]byte(state))
	sealed := head + "." + base64.RawURLEncoding.EncodeToString(pc.mac(head, bind.String()))
	switch v := res.(type) {
	case *mcp.CallToolResult:
		v.RequestState = sealed
	case *mcp.GetPromptResult:
		v.RequestState = sealed
	case *mcp.ReadResourceResult:
		v.RequestState = sealed
	}
}

// openUpstream checks a sealed upstream state and returns the upstream's.
func (pc *parkedCalls) openUpstream(sealed, bind string) (string, bool) {
	i := strings.LastIndexByte(sealed, '.')
	if i < len(upstreamPrefix) {
		return "", false
	}
	head, sig := sealed[:i], sealed[i+1:]
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, pc.mac(head, bind)) {
		return "", false
	}
	state, err := b64.DecodeString(head[len(upstreamPrefix):])
	return string(state), err == nil
}

// retry is what a retried request carries: its state and its answers.
type retry struct {
	State     string                     `json:"requestState"`
	Responses map[string]json.RawMessage `json:"inputResponses"`
}

// retryParams reads a request's retry fields; params are decoded only when
// they may hold them.
func retryParams(params json.RawMessage) (retry, error) {
	var rt retry
	if !bytes.Contains(params, []byte(`"requestState"`)) && !bytes.Contains(params, []byte(`"inputResponses"`)) {
		return rt, nil
	}
	if err := json.Unmarshal(params, &rt); err != nil {
		return rt, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState or inputResponses: " + err.Error()}
	}
	return rt, nil
}

// binding is what a call's state is bound to, worked out when first
// needed: most calls never ask for input. Not for concurrent use.
type binding struct {
	r      *session.Request
	method string
	v      string
}

func (b *binding) String() string {
	if b.v == "" {
		b.v = bindingOf(b.r, b.method)
	}
	return b.v
}

// bindingOf is what a call's state is bound to: the caller (view and
// token) and the call (method and what it names).
func bindingOf(r *session.Request, method string) string {
	pr, _ := r.Session.Principal().(principal)
	var named struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	_, _ = sjson.Parse(r.Params, &named, 0) // one pass; a call's arguments are skipped
	return strings.Join([]string{pr.view, pr.tokenID, method, named.Name, named.URI}, "\x00")
}

// start runs a new call for r, parked from the start: it outlives r's
// answer if it asks for input.
func (pc *parkedCalls) start(ctx context.Context, r *session.Request, from *binding, next session.Handler) *parkedCall {
	c := &parkedCall{pc: pc, from: from, asks: make(chan *inputAsk, 8), done: make(chan struct{}), pending: map[string]*inputAsk{}}
	c.relay.cur.Store(r)
	// The call keeps the request's values (the principal, the trace), not
	// its end: it ends with its own cancel.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	stop := context.AfterFunc(pc.done, cancel)
	detached := r.Detach(&c.relay, c.ask)
	pc.run(func() {
		defer stop()
		defer cancel()
		c.res, c.err = next(cctx, detached)
		c.mu.Lock()
		id := c.id
		c.mu.Unlock()
		if id != "" {
			pc.mu.Lock()
			delete(pc.calls, id)
			pc.mu.Unlock()
		}
		close(c.done)
	})
	return c
}

// register gives the call its ID and puts it in the list of calls a
// retry can continue, when it first asks for input.
func (c *parkedCall) register() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id != "" {
		return nil
	}
	pc := c.pc
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if len(pc.calls) >= maxParked {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many calls waiting for input (limit %d); retry later", maxParked)}
	}
	// Not from.String(): the request's goroutine may be using from.
	c.id, c.bind = rand.Text(), bindingOf(c.from.r, c.from.method)
	pc.calls[c.id] = c
	return nil
}

// ask is the call's way to the client: its request goes out with the next
// input_required answer, and it waits for the retry that answers it.
func (c *parkedCall) ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := c.register(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	a := &inputAsk{method: method, params: raw, reply: make(chan json.RawMessage, 1)}
	select {
	case c.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case raw := <-a.reply:
		return raw, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// resume finds the call a retry's state names and hands it the answers.
func (pc *parkedCalls) resume(rt retry, bind string) (*parkedCall, error) {
	id, round, ok := pc.open(rt.State, bind)
	if !ok {
		return nil, badState
	}
	pc.mu.Lock()
	c := pc.calls[id]
	pc.mu.Unlock()
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
func (pc *parkedCalls) wait(ctx context.Context, c *parkedCall, r *session.Request) (any, error) {
	c.relay.cur.Store(r)
	c.mu.Lock()
	unanswered := len(c.pending) > 0
	c.mu.Unlock()
	if unanswered {
		// The client left some questions out: they are asked again.
		return pc.inputRequired(c, nil)
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
		return pc.inputRequired(c, asks)
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
func (pc *parkedCalls) inputRequired(c *parkedCall, asks []*inputAsk) (json.RawMessage, error) {
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
	}{"input_required", reqs, pc.seal(id, round, bind)})
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

// seal is a call's requestState for a round: the call's ID, the round and
// an HMAC over them and what the call is bound to.
func (pc *parkedCalls) seal(id string, round int, bind string) string {
	head := parkedPrefix + id + "." + strconv.Itoa(round)
	return head + "." + base64.RawURLEncoding.EncodeToString(pc.mac(head, bind))
}

// open checks a requestState and returns the call ID and round it holds.
func (pc *parkedCalls) open(state, bind string) (string, int, bool) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 {
		return "", 0, false
	}
	head, sig := state[:i], state[i+1:]
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, pc.mac(head, bind)) {
		return "", 0, false
	}
	id, r, _ := strings.Cut(strings.TrimPrefix(head, parkedPrefix), ".")
	round, err := strconv.Atoi(r)
	return id, round, err == nil && strings.HasPrefix(head, parkedPrefix)
}

func (pc *parkedCalls) mac(id, bind string) []byte {
	m := hmac.New(sha256.New, *pc.key.Load())
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write([]byte(bind))
	return m.Sum(nil)
}
