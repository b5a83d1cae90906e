package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sink receives what a server sends about one call while the call runs:
// its progress notifications, the log messages it writes meanwhile, and the
// server→client requests (sampling, elicitation) routed to it. Methods are
// called on the calling goroutine, in the order the server sent the
// messages, and all before the call returns: a notification the server
// wrote before its response is handed on before the response, by
// construction.
type Sink interface {
	// Notify hands on notifications/progress (with the token the
	// connection minted; see Handle.Call) or notifications/message.
	Notify(ctx context.Context, method string, params json.RawMessage)
	// Request answers a server→client request made during the call.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Owner is the downstream session the call belongs to (comparable): a
	// log message written while several calls of one session are in flight
	// reaches that session once.
	Owner() any
}

// ErrConnectionClosed is wrapped by the error of every call the connection
// could not finish because it ended.
var ErrConnectionClosed = errors.New("connection closed")

// maxQueued bounds the notifications waiting for one call's goroutine;
// beyond it they are dropped (and counted), never the response.
const maxQueued = 4096

// maxServerRequests bounds the server→client requests answered at once
// outside any call; more are refused at once.
const maxServerRequests = 16

// clientHooks is what a client hands to its Handle: everything the server
// sends outside a call.
type clientHooks struct {
	// listChanged is called for notifications/{tools,prompts,resources}/list_changed,
	// with the notification's method.
	listChanged func(method string)
	// notify gets a log message written while no call was in flight, and
	// notifications/resources/updated.
	notify func(method string, params json.RawMessage)
	// request answers a server→client request no call can take (roots/list,
	// or sampling and elicitation with no single call to route to).
	request func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// stray counts answers to no call in flight (the Handle's, across
	// its connections); nil counts none.
	stray *strayAnswers
}

// client is switchboard's side of one MCP session with a server, over any
// mcp.Connection: it initializes the session, sends requests, and reads
// every message the server sends on one goroutine, in order. A response is
// delivered to its call through the call's own queue, after whatever the
// server sent about the call before it; so a call hands on its
// notifications before it returns, without waiting for anything. (Over
// streamable HTTP, a response that is the first message of its call's
// stream is delivered from the goroutine that read the stream: nothing of
// the call's came before it; see streamableConn.setDirect.)
//
// A client is safe for concurrent use. close ends it; its read loop and
// every goroutine answering a server request are then waited for.
type client struct {
	conn  mcp.Connection
	hooks clientHooks
	log   hclog.Logger

	ids    atomic.Int64
	tokens atomic.Uint64
	init   atomic.Pointer[mcp.InitializeResult]
	modern atomic.Pointer[modernClient] // set once the server speaks 2026-07-28 (modern.go)
	watch  watches                      // its resource subscriptions (watch.go)

	mu       sync.Mutex
	calls    map[jsonrpc.ID]*pending
	progress map[string]*pending
	serving  map[jsonrpc.ID]context.CancelFunc // server→client requests being answered
	gaveUp   abandoned                         // calls given up on: their late answers are no fault

	ctx     context.Context // the client's lifetime
	cancel  context.CancelFunc
	failed  chan struct{} // closed when the read loop stopped reading
	err     error         // why it stopped; read after failed
	done    chan struct{} // closed when the connection is closed too
	endErr  error         // why the session ended (a child's exit status); read after done
	wg      sync.WaitGroup
	slots   chan struct{} // maxServerRequests
	dropped atomic.Int64
	closeMu sync.Once
	closing bool // under mu: no more goroutines start
}

// pending is one call in flight: the queue of what the server sent about
// it, in read order, ending with its response.
type pending struct {
	id    jsonrpc.ID
	sink  Sink
	token string // minted progress token, if any

	mu    sync.Mutex
	queue []*jsonrpc.Request
	resp  *jsonrpc.Response
	ready chan struct{} // one pending wake-up
}

func newClient(conn mcp.Connection, hooks clientHooks, log hclog.Logger) *client {
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{
		conn: conn, hooks: hooks, log: log,
		calls:    map[jsonrpc.ID]*pending{},
		progress: map[string]*pending{},
		serving:  map[jsonrpc.ID]context.CancelFunc{},
		ctx:      ctx, cancel: cancel,
		failed: make(chan struct{}),
		done:   make(chan struct{}),
		slots:  make(chan struct{}, maxServerRequests),
	}
	if d, ok := conn.(interface{ setDirect(func(*jsonrpc.Response)) }); ok {
		d.setDirect(c.deliver)
	}
	go c.readLoop()
	return c
}

// close ends the session: the connection is closed (for a child: stdin
// closed, then the stop sequence), calls in flight fail, and close waits
// for the read loop and the goroutines answering server requests. It is
// idempotent and safe for concurrent use.
func (c *client) close() error {
	var err error
	c.closeMu.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		c.cancel()
		err = c.conn.Close()
		<-c.done
		c.wg.Wait()
	})
	return err
}

// wait blocks until the session ended and returns why.
func (c *client) wait() error {
	<-c.done
	return c.endErr
}

// initializeResult is the server's answer to initialize, or nil before it.
func (c *client) initializeResult() *mcp.InitializeResult { return c.init.Load() }

// readLoop reads until the connection ends. Then calls fail at once, and
// the connection is closed (a child is waited for), so that why the session
// ended can name the child's exit status.
func (c *client) readLoop() {
	defer close(c.done)
	for {
		msg, err := c.conn.Read(c.ctx)
		if err != nil {
			if c.ctx.Err() != nil {
				err = fmt.Errorf("%w: closed by switchboard", ErrConnectionClosed)
			}
			c.err = err
			c.failAll()
			close(c.failed)
			c.endErr = err
			if c.ctx.Err() == nil {
				if cerr := c.conn.Close(); cerr != nil {
					c.endErr = cerr
				}
			}
			return
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			c.deliver(m)
		case *jsonrpc.Request:
			if m.IsCall() {
				c.serverRequest(m)
			} else {
				c.notification(m)
			}
		}
	}
}

// failAll wakes every call: the connection is gone.
func (c *client) failAll() {
	c.mu.Lock()
	calls := c.calls
	c.calls, c.progress = map[jsonrpc.ID]*pending{}, map[string]*pending{}
	for _, cancel := range c.serving {
		cancel()
	}
	c.mu.Unlock()
	for _, p := range calls {
		p.wake()
	}
}

// push queues a notification or server request for a call; false when the
// queue is full.
func (p *pending) push(r *jsonrpc.Request) bool {
	p.mu.Lock()
	if len(p.queue) >= maxQueued {
		p.mu.Unlock()
		return false
	}
	p.queue = append(p.queue, r)
	p.mu.Unlock()
	p.wake()
	return true
}

func (p *pending) wake() {
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// take returns what is queued, and the response once everything queued
// before it was taken.
func (p *pending) take() ([]*jsonrpc.Request, *jsonrpc.Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue = nil
	if len(q) > 0 {
		return q, nil
	}
	return nil, p.resp
}

// relatedCall returns the call a message belongs to by the stream it came
// on, or nil.
func (c *client) relatedCall(r *jsonrpc.Request) *pending {
	rel, ok := r.Extra.(relatedRequest)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[rel.ID]
}

func (c *client) notification(r *jsonrpc.Request) {
	if sp, ok := r.Extra.(streamPaused); ok {
		c.mu.Lock()
		p := c.calls[sp.call]
		c.mu.Unlock()
		if p != nil && p.sink != nil {
			p.push(r)
		}
		return
	}
	switch r.Method {
	case "notifications/progress":
		var p struct {
			Token any `json:"progressToken"`
		}
		if json.Unmarshal(r.Params, &p) != nil {
			return
		}
		tok, _ := p.Token.(string)
		c.mu.Lock()
		call := c.progress[tok]
		c.mu.Unlock()
		if call != nil && !call.push(r) {
			c.dropped.Add(1)
		}
	case "notifications/message":
		c.logMessage(r)
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		if c.hooks.listChanged != nil {
			c.hooks.listChanged(r.Method)
		}
	case "notifications/subscriptions/acknowledged":
		c.acknowledged(r.Params)
	case "notifications/resources/updated":
		if c.hooks.notify != nil {
			c.hooks.notify(r.Method, r.Params)
		}
	case "notifications/cancelled":
		var p struct {
			ID any `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) != nil {
			return
		}
		id, err := jsonrpc.MakeID(p.ID)
		if err != nil {
			return
		}
		c.mu.Lock()
		cancel := c.serving[id]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
}

// logMessage routes a log message: to the call whose stream carried it;
// else, when the calls in flight all belong to one downstream session, to
// one of them; else, outside any call, to the hook. A message written while
// several sessions have calls in flight cannot be told apart: it reaches
// none of them (only switchboard's own log), so that no session sees
// another's.
func (c *client) logMessage(r *jsonrpc.Request) {
	if p := c.relatedCall(r); p != nil {
		if p.sink != nil && !p.push(r) {
			c.dropped.Add(1)
		}
		return
	}
	var (
		target *pending
		owner  any
		mixed  bool
	)
	c.mu.Lock()
	for _, p := range c.calls {
		if p.sink == nil {
			continue
		}
		switch o := p.sink.Owner(); {
		case target == nil:
			target, owner = p, o
		case o != owner:
			mixed = true
		}
	}
	c.mu.Unlock()
	switch {
	case mixed:
		c.log.Debug("upstream log message not forwarded", "reason", "calls of several sessions in flight")
	case target != nil:
		if !target.push(r) {
			c.dropped.Add(1)
		}
	case c.hooks.notify != nil:
		c.hooks.notify(r.Method, r.Params)
	}
}

// notify sends a notification to the server.
func (c *client) notify(ctx context.Context, method string, params any) error {
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("%s: encode params: %w", method, err)
		}
		raw = b
	}
	if err := c.conn.Write(ctx, &jsonrpc.Request{Method: method, Params: raw}); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConnectionClosed, method, err)
	}
	return nil
}

// call sends one request and returns its raw result. A progressToken in
// the params' _meta asks for progress: it is replaced by a token of the
// connection's own, so a client's token never reaches a server, and the
// server's progress reaches sink under that token. Whatever the server
// sends about the call reaches sink before call returns (see Sink). A
// cancelled ctx returns at once and tells the server in the background; a
// JSON-RPC error answer is returned as *jsonrpc.Error.
func (c *client) call(ctx context.Context, method string, params mcp.Params, sink Sink) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n, _ := jsonrpc.MakeID(float64(c.ids.Add(1)))
	p := &pending{id: n, sink: sink, ready: make(chan struct{}, 1)}
	c.replaceProgressToken(p, params)
	raw, err := c.encodeFor(params, sink)
	if err != nil {
		return nil, fmt.Errorf("%s: encode params: %w", method, err)
	}
	if err := c.register(p, method); err != nil {
		return nil, err
	}
	if err := c.conn.Write(ctx, &jsonrpc.Request{ID: n, Method: method, Params: raw}); err != nil {
		c.forget(p)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrConnectionClosed, method, err)
	}
	return c.await(ctx, p, method)
}

// replaceProgressToken swaps a progressToken in the _meta of params for a
// token of the connection's own when p has a sink to take the progress, and
// drops it otherwise. Either way the client's token never reaches the
// server.
func (c *client) replaceProgressToken(p *pending, params mcp.Params) {
	if params == nil {
		return
	}
	meta := params.GetMeta()
	if meta == nil || meta["progressToken"] == nil {
		return
	}
	m := make(map[string]any, len(meta))
	if p.sink == nil {
		for k, v := range meta {
			if k != "progressToken" {
				m[k] = v
			}
		}
	} else {
		p.token = "sb-" + strconv.FormatUint(c.tokens.Add(1), 36)
		for k, v := range meta {
			m[k] = v
		}
		m["progressToken"] = p.token
	}
	params.SetMeta(m)
}

// register records p as a call in flight, unless the connection failed.
func (c *client) register(p *pending, method string) error {
	c.mu.Lock()
	select {
	case <-c.failed:
		c.mu.Unlock()
		return fmt.Errorf("%w: %s: %v", ErrConnectionClosed, method, c.err)
	default:
	}
	c.calls[p.id] = p
	if p.token != "" {
		c.progress[p.token] = p
	}
	c.mu.Unlock()
	return nil
}

// await waits for the answer to the call p, handing the sink what the
// server sends about the call on the way. A cancelled ctx returns at once
// and tells the server in the background.
func (c *client) await(ctx context.Context, p *pending, method string) (json.RawMessage, error) {
	for {
		select {
		case <-p.ready:
		case <-ctx.Done():
			c.forget(p)
			c.spawn(func() { c.cancelled(p.id, ctx.Err()) })
			return nil, ctx.Err()
		case <-c.failed:
			// What was read before the connection ended still goes on:
			// the call's queued notifications, and its response if it came.
			q, r := p.take()
			for _, m := range q {
				c.handOn(ctx, p, m)
			}
			if len(q) > 0 || r != nil {
				break
			}
			return nil, fmt.Errorf("%w: %s: %v", ErrConnectionClosed, method, c.err)
		}
		if resp := c.drain(ctx, p); resp != nil {
			if resp.Error != nil {
				return nil, resp.Error
			}
			return resp.Result, nil
		}
	}
}

// drain hands the sink every message queued for p, in order, and returns
// the response once everything queued before it was handed on, or nil.
func (c *client) drain(ctx context.Context, p *pending) *jsonrpc.Response {
	for {
		queue, resp := p.take()
		if resp != nil {
			return resp
		}
		if len(queue) == 0 {
			return nil
		}
		for _, r := range queue {
			c.handOn(ctx, p, r)
		}
	}
}

// handOn gives the sink one message about its call.
func (c *client) handOn(ctx context.Context, p *pending, r *jsonrpc.Request) {
	if sp, ok := r.Extra.(streamPaused); ok {
		if pz, ok := p.sink.(Pauser); ok {
			pz.Pause(sp.retry)
		}
		return
	}
	if !r.IsCall() {
		p.sink.Notify(ctx, r.Method, r.Params)
		return
	}
	res, err := p.sink.Request(ctx, r.Method, r.Params)
	c.reply(ctx, r.ID, res, err)
}

// cancelled tells the server that a call gave up. Best effort, off the
// caller's path.
func (c *client) cancelled(id jsonrpc.ID, cause error) {
	_ = c.notify(c.ctx, "notifications/cancelled", &mcp.CancelledParams{RequestID: id.Raw(), Reason: cause.Error()})
}

// initialize runs the handshake: initialize with the given protocol
// version, check the answer, then notifications/initialized.
func (c *client) initialize(ctx context.Context, version string, info *mcp.Implementation, caps *mcp.ClientCapabilities) error {
	params := &mcp.InitializeParams{ProtocolVersion: version, ClientInfo: info, Capabilities: caps}
	raw, err := c.call(ctx, "initialize", params, nil)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var res mcp.InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("initialize: decode result: %w", err)
	}
	if !legacyVersion(res.ProtocolVersion) {
		return fmt.Errorf("initialize: server chose protocol version %q, which switchboard does not speak upstream", res.ProtocolVersion)
	}
	c.init.Store(&res)
	if err := c.notify(ctx, "notifications/initialized", &mcp.InitializedParams{}); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// legacyVersions are the protocol versions switchboard speaks with a
// server: those with the initialize handshake, newest first.
var legacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

func legacyVersion(v string) bool {
	for _, l := range legacyVersions {
		if v == l {
			return true
		}
	}
	return false
}
