package session

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stream is where a session writes: the response stream of one request (a
// POST's event stream) or the session's own stream (a standalone GET
// stream, a legacy SSE stream, stdout). Write sends one message; it must be
// safe for concurrent use and return within the transport's write deadline.
type Stream interface {
	Write(ctx context.Context, msg jsonrpc.Message) error
}

// Listener is a Stream that can tell whether a message written now has a
// client to reach (a streamable-HTTP session's own stream exists only while
// its GET is open). A notification for a stream that is not listening is
// refused with ErrNoStream instead of being queued.
type Listener interface {
	Listening() bool
}

// Handler answers one request. It returns the result to encode (a
// json.RawMessage is sent as it is), or an error: a *jsonrpc.Error is sent
// as it is, any other as an internal error with a generic message.
type Handler func(ctx context.Context, r *Request) (any, error)

// Methods is the dispatch table: one Handler per method.
type Methods map[string]Handler

// Options configure a Session. Every field but Methods may be left zero.
type Options struct {
	// ID names the session (Mcp-Session-Id on streamable HTTP).
	ID string
	// Principal is what the transport authenticated (the view and the
	// token); the session only carries it.
	Principal any
	// Methods answers every method beyond the protocol's own.
	Methods Methods
	// ServerInfo, Capabilities and Instructions are the initialize answer.
	ServerInfo   *mcp.Implementation
	Capabilities *mcp.ServerCapabilities
	Instructions string
	// Extensions, if set, are the extensions declared in Capabilities
	// (initialize, server/discover) for the session at the time it asks:
	// those its view's servers declare (nil: none). ctx is the request's,
	// caps what the client declared with it (nil: nothing).
	Extensions func(ctx context.Context, s *Session, caps *mcp.ClientCapabilities) map[string]any
	// Cache is what 2026-07-28 lists, reads and discover say about
	// caching them.
	Cache Cache
	// OfferModern decides whether server/discover lists 2026-07-28 to a
	// client that declared caps (nil: always); a client not offered it
	// falls back to a legacy session.
	OfferModern func(s *Session, caps *mcp.ClientCapabilities) bool
	// MaxInFlight bounds the requests Go runs at once; more are answered
	// with an error. If zero, 256.
	MaxInFlight int
	// MaxQueued bounds the bytes of notifications waiting for the
	// session's own stream (see outbox.go). If zero, DefaultMaxQueued.
	MaxQueued int
	// Resumed, if set, makes a session that starts initialized: one its
	// client initialized with another process (see Resumed).
	Resumed *Resumed
	// OnLevel is called after the client set its log level.
	OnLevel func(*Session, mcp.LoggingLevel)
	// OnRootsChanged is called for notifications/roots/list_changed, and
	// OnInitialized for notifications/initialized.
	OnRootsChanged func(*Session)
	OnInitialized  func(*Session)
	// OnClose is called once, when the session closes.
	OnClose func(*Session)
	// Logger receives debug lines about the protocol; if nil, none.
	Logger hclog.Logger
}

// Session is one client's session. See the package doc.
type Session struct {
	opt  Options
	log  hclog.Logger
	ctx  context.Context // the session's lifetime
	stop context.CancelFunc
	wg   sync.WaitGroup
	busy atomic.Int32 // requests Go has running, bounded by MaxInFlight

	protocol protocol // what initialize settled, the log level and the dispatch, see protocol.go
	outbound outbound // the own stream, notifications and requests to the client, see outbound.go

	mu          sync.Mutex
	subs        map[string]bool
	inflight    map[jsonrpc.ID]context.CancelFunc
	answering   int           // requests out of inflight whose answer is being written
	idle        chan struct{} // closed when the last request in flight is answered, for Drain
	jobs        chan job      // requests for idle workers (unbuffered), made by the first Go
	jobsOnce    sync.Once
	idleWorkers atomic.Int32
	workers     sync.WaitGroup // the goroutines of worker; Close waits for them
	closed      bool
	closeOnce   sync.Once
	afterClose  []func()      // see AfterClose
	closedAll   chan struct{} // closed once Close has run OnClose and afterClose
	done        chan struct{}
	listens     atomic.Int32 // subscriptions/listen requests open
}

// Resumed is what a session resumed from its ID knows of the initialize
// its client sent elsewhere. The log level and resource subscriptions the
// client set there are not known: the level is the default again, and
// nothing is subscribed.
type Resumed struct {
	Version    string          // negotiated then; must be one of Versions
	Caps       json.RawMessage // the client's capabilities as it sent them
	ClientInfo *mcp.Implementation
}

// New returns a session; out is its own stream (nil: none yet, see
// SetStream).
func New(opt Options, out Stream) *Session {
	if opt.Logger == nil {
		opt.Logger = hclog.NewNullLogger()
	}
	if opt.MaxInFlight <= 0 {
		opt.MaxInFlight = 256
	}
	opt.MaxInFlight = min(opt.MaxInFlight, math.MaxInt32) // counted in an int32
	if opt.MaxQueued <= 0 {
		opt.MaxQueued = DefaultMaxQueued
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Session{
		opt: opt, log: opt.Logger, ctx: ctx, stop: stop,
		inflight:  map[jsonrpc.ID]context.CancelFunc{},
		done:      make(chan struct{}),
		closedAll: make(chan struct{}),
	}
	s.outbound = outbound{id: opt.ID, log: opt.Logger, max: opt.MaxQueued, done: s.done, lost: s.Close}
	s.outbound.setStream(out)
	s.protocol = protocol{methods: opt.Methods, info: opt.ServerInfo, caps: opt.Capabilities, instructions: opt.Instructions,
		extensions: opt.Extensions, cache: opt.Cache, offerModern: opt.OfferModern, onLevel: opt.OnLevel}
	if r := opt.Resumed; r != nil {
		caps, _ := decodeCaps(r.Caps)
		s.protocol.hello = negotiated{initialized: true, version: Negotiate(r.Version), clientInfo: r.ClientInfo, clientCaps: caps}
	}
	return s
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.opt.ID }

// Principal returns what the transport authenticated.
func (s *Session) Principal() any { return s.opt.Principal }

// Done is closed when the session closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Context ends when the session closes, before Close waits for the
// handlers still running: work that outlives its request's answer
// (AnswerEarly) ends with it.
func (s *Session) Context() context.Context { return s.ctx }

// Ended is closed once Close finished: what was in flight is answered.
func (s *Session) Ended() <-chan struct{} { return s.closedAll }

// AfterClose arranges for f to run when the session closes, on the
// goroutine that closes it, after OnClose; at once if it has closed
// already. Nothing waits for the close meanwhile: an idle session costs no
// goroutine. f must not call Close.
func (s *Session) AfterClose(f func()) {
	s.mu.Lock()
	if !s.closed {
		s.afterClose = append(s.afterClose, f)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	<-s.closedAll
	f()
}

// Initialized reports whether initialize was answered.
func (s *Session) Initialized() bool { return s.protocol.state().initialized }

// Announced reports whether the session hears of list changes: it was
// initialized, or a subscriptions/listen request of it is open.
func (s *Session) Announced() bool {
	return s.listens.Load() > 0 || s.Initialized()
}

// ProtocolVersion is the negotiated version ("" before initialize).
func (s *Session) ProtocolVersion() string { return s.protocol.state().version }

// ClientCapabilities are the capabilities the client declared (nil before
// initialize).
func (s *Session) ClientCapabilities() *mcp.ClientCapabilities { return s.protocol.state().clientCaps }

// ClientInfo is the client's implementation info (nil before initialize).
func (s *Session) ClientInfo() *mcp.Implementation { return s.protocol.state().clientInfo }

// LogLevel is the level the client asked for ("": none; no log message is
// sent until it asks).
func (s *Session) LogLevel() mcp.LoggingLevel { return s.protocol.logLevel() }

// Subscribe records a subscription to uri and reports whether it is new.
func (s *Session) Subscribe(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[uri] {
		return false
	}
	if s.subs == nil { // made on first use: most sessions never subscribe
		s.subs = map[string]bool{}
	}
	s.subs[uri] = true
	return true
}

// Unsubscribe forgets a subscription and reports whether there was one.
func (s *Session) Unsubscribe(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.subs[uri] {
		return false
	}
	delete(s.subs, uri)
	return true
}

// Subscribed reports whether the session subscribed to uri.
func (s *Session) Subscribed(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs[uri]
}

// Subscriptions lists the session's subscriptions.
func (s *Session) Subscriptions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.subs))
	for u := range s.subs {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// SetStream sets (nil: clears) the session's own stream.
func (s *Session) SetStream(out Stream) { s.outbound.setStream(out) }

// ErrNoStream is returned for a message that has no stream to go to.
var ErrNoStream = errors.New("session: no open stream for the message")

// ErrClosed is returned once the session closed.
var ErrClosed = errors.New("session: closed")

// ErrSessionLimit refuses a new session because its client already holds
// as many as it may; a transport answers it as "too many requests" with
// the error's text.
var ErrSessionLimit = errors.New("too many open sessions")

// Notify queues a notification for the session's own stream (see
// outbox.go): it returns without waiting for the client.
func (s *Session) Notify(_ context.Context, method string, params any) error {
	return s.outbound.notify(s.ctx, method, params)
}

// Log sends a log message on the session's own stream, if the client asked
// for messages of its level.
func (s *Session) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	if !s.protocol.wantsLog(p.Level) {
		return nil
	}
	return s.Notify(ctx, "notifications/message", p)
}

// LogEncoded is Log for a message already encoded (params of
// notifications/message at level l): a message for many sessions is
// encoded once.
func (s *Session) LogEncoded(l mcp.LoggingLevel, params json.RawMessage) error {
	if !s.protocol.wantsLog(l) {
		return nil
	}
	return s.outbound.post(s.ctx, &jsonrpc.Request{Method: "notifications/message", Params: params})
}

// Ask sends a request to the client on the session's own stream and waits
// for the answer.
func (s *Session) Ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return s.outbound.ask(ctx, s.outbound.stream(), method, params)
}

// Close ends the session: requests in flight are cancelled, requests to
// the client fail, OnClose runs, and Close waits for the goroutines Go
// started (requests and idle workers). It is idempotent and safe for
// concurrent use.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		// Requests in flight end with the session (begin registers each
		// before closed is set, or refuses it).
		for _, cancel := range s.inflight {
			cancel()
		}
		s.mu.Unlock()
		s.stop()
		s.wg.Wait()
		// Every worker was started before its request ended; the idle ones
		// return now that done is closed.
		s.workers.Wait()
		if s.opt.OnClose != nil {
			s.opt.OnClose(s)
		}
		for _, f := range s.afterClose { // closed is set: no more are added
			f()
		}
		close(s.closedAll)
	})
}

// Request is one request from the client being handled.
type Request struct {
	Session *Session
	ID      jsonrpc.ID
	Method  string
	Params  json.RawMessage
	// Extra is what the transport attached to the message (the HTTP
	// request's token and headers).
	Extra any
	out   Stream
	era   *era // a 2026-07-28 request's own state; nil: the session's
	ask   AskFunc
	ans   *answer // shared with the request's detached copies
}

// AskFunc sends a request to the client and returns its answer.
type AskFunc func(ctx context.Context, method string, params any) (json.RawMessage, error)

// Detach returns a copy of r for work that outlives r's own answer (a
// 2026-07-28 call waiting for the client's input between requests): what
// it sends about the request goes to out, its requests to the client to
// ask.
func (r *Request) Detach(out Stream, ask AskFunc) *Request {
	cp := *r
	cp.out, cp.ask = out, ask
	return &cp
}

// ErrAnswered is what a handler returns once its request was answered
// early (AnswerEarly): nothing more is written for it.
var ErrAnswered = errors.New("session: the request was answered before its handler returned")

// Lingerer is a Stream that must know when the handler of a request it
// answers goes on after the answer (AnswerEarly): over HTTP/1 the
// connection is held until the handler returns.
type Lingerer interface {
	Linger()
}

// AnswerEarly answers r now, on its own stream, while its handler goes on
// (a 2026-07-28 call that asked for input runs on until the client's retry
// brings the answers); the handler then returns ErrAnswered. The request
// is out of flight from here: its ID is free and its context ends. It
// reports false if r was answered already. Safe from any goroutine.
func (r *Request) AnswerEarly(res any, err error) bool {
	if r.ans == nil || r.ans.done.Load() {
		return false // answered, or not a request a session runs
	}
	if l, ok := r.ans.out.(Lingerer); ok {
		l.Linger()
	}
	return r.answer(res, err)
}

// Pause closes the request's stream for the client to take up later
// (SEP-1699), if its transport can: an upstream did so with its own.
func (r *Request) Pause(retry time.Duration) {
	if p, ok := r.out.(interface{ Pause(time.Duration) }); ok {
		p.Pause(retry)
	}
}

// Stream is the stream the request's answer and notifications go to.
func (r *Request) Stream() Stream { return r.out }

// Modern reports whether the request is of protocol 2026-07-28 or later:
// it carries its version, capabilities and log level itself.
func (r *Request) Modern() bool { return r.era != nil }

// ProtocolVersion is the request's protocol version: its own, or the
// session's.
func (r *Request) ProtocolVersion() string {
	if r.era != nil {
		return r.era.version
	}
	return r.Session.ProtocolVersion()
}

// ClientCapabilities are the capabilities the client declared for the
// request: in its _meta, or at initialize.
func (r *Request) ClientCapabilities() *mcp.ClientCapabilities {
	if r.era != nil {
		return r.era.caps
	}
	return r.Session.ClientCapabilities()
}

// ClientInfo is the client's implementation info, as ClientCapabilities.
func (r *Request) ClientInfo() *mcp.Implementation {
	if r.era != nil {
		return r.era.info
	}
	return r.Session.ClientInfo()
}

// LogLevel is the level of log messages the client wants about the
// request ("": none).
func (r *Request) LogLevel() mcp.LoggingLevel {
	if r.era != nil {
		return r.era.level
	}
	return r.Session.LogLevel()
}

// Notify sends a notification about the request on the request's stream.
func (r *Request) Notify(ctx context.Context, method string, params any) error {
	return notifyOn(ctx, r.out, method, params)
}

// Log sends a log message on the request's stream, if the client asked for
// messages of its level.
func (r *Request) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	if want := r.LogLevel(); want == "" || LevelRank(p.Level) < LevelRank(want) {
		return nil
	}
	return r.Notify(ctx, "notifications/message", p)
}

// ErrModernAsk refuses a request to the client during a 2026-07-28
// request: that protocol has none (a server asks for input in its result).
var ErrModernAsk = errors.New("session: protocol 2026-07-28 has no requests from server to client")

// Ask sends a request to the client on the request's stream and waits for
// the answer.
func (r *Request) Ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if r.ask != nil {
		return r.ask(ctx, method, params)
	}
	if r.era != nil {
		return nil, ErrModernAsk
	}
	return r.Session.outbound.ask(ctx, r.out, method, params)
}
