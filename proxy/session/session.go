package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

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

// Handler answers one request. It returns the result to encode (a
// json.RawMessage is sent as it is), or an error: a *jsonrpc.Error is sent
// as it is, any other as an internal error with a generic message.
type Handler func(ctx context.Context, r *Request) (any, error)

// Methods is the dispatch table: one Handler per method.
type Methods map[string]Handler

// Versions are the protocol versions a session negotiates at initialize,
// newest first: those with the initialize handshake.
var Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

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
	// MaxInFlight bounds the requests Go runs at once; more are answered
	// with an error. If zero, 256.
	MaxInFlight int
	// OnLevel is called after the client set its log level.
	OnLevel func(*Session, mcp.LoggingLevel)
	// OnRootsChanged is called for notifications/roots/list_changed.
	OnRootsChanged func(*Session)
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
	out  atomic.Pointer[streamBox] // the session's own stream, if any
	slot chan struct{}

	mu           sync.Mutex
	initialized  bool
	version      string
	clientInfo   *mcp.Implementation
	clientCaps   *mcp.ClientCapabilities
	level        mcp.LoggingLevel
	subs         map[string]bool
	inflight     map[jsonrpc.ID]context.CancelFunc
	asks         map[jsonrpc.ID]chan *jsonrpc.Response
	idle         chan struct{} // closed when the last request in flight ends, for Drain
	jobs         chan job      // requests for idle workers (unbuffered)
	idleWorkers  atomic.Int32
	closed       bool
	closeOnce    sync.Once
	done         chan struct{}
	nextAskID    atomic.Int64
	initialState chan struct{} // closed once notifications/initialized arrived
}

type streamBox struct{ s Stream }

// New returns a session; out is its own stream (nil: none yet, see
// SetStream).
func New(opt Options, out Stream) *Session {
	if opt.Logger == nil {
		opt.Logger = hclog.NewNullLogger()
	}
	if opt.MaxInFlight <= 0 {
		opt.MaxInFlight = 256
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Session{
		opt: opt, log: opt.Logger, ctx: ctx, stop: stop,
		slot:         make(chan struct{}, opt.MaxInFlight),
		subs:         map[string]bool{},
		inflight:     map[jsonrpc.ID]context.CancelFunc{},
		asks:         map[jsonrpc.ID]chan *jsonrpc.Response{},
		jobs:         make(chan job),
		done:         make(chan struct{}),
		initialState: make(chan struct{}),
	}
	if out != nil {
		s.out.Store(&streamBox{out})
	}
	return s
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.opt.ID }

// Principal returns what the transport authenticated.
func (s *Session) Principal() any { return s.opt.Principal }

// Done is closed when the session closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Initialized reports whether initialize was answered.
func (s *Session) Initialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initialized
}

// ProtocolVersion is the negotiated version ("" before initialize).
func (s *Session) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// ClientCapabilities are the capabilities the client declared (nil before
// initialize).
func (s *Session) ClientCapabilities() *mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientCaps
}

// ClientInfo is the client's implementation info (nil before initialize).
func (s *Session) ClientInfo() *mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientInfo
}

// LogLevel is the level the client asked for ("": none; no log message is
// sent until it asks).
func (s *Session) LogLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// Subscribe records a subscription to uri and reports whether it is new.
func (s *Session) Subscribe(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[uri] {
		return false
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
func (s *Session) SetStream(out Stream) {
	if out == nil {
		s.out.Store(nil)
		return
	}
	s.out.Store(&streamBox{out})
}

// stream is the session's own stream, or nil.
func (s *Session) stream() Stream {
	if b := s.out.Load(); b != nil {
		return b.s
	}
	return nil
}

// ErrNoStream is returned for a message that has no stream to go to.
var ErrNoStream = errors.New("session: no open stream for the message")

// ErrClosed is returned once the session closed.
var ErrClosed = errors.New("session: closed")

// Notify sends a notification on the session's own stream.
func (s *Session) Notify(ctx context.Context, method string, params any) error {
	return s.notifyOn(ctx, s.stream(), method, params)
}

func (s *Session) notifyOn(ctx context.Context, out Stream, method string, params any) error {
	if out == nil {
		return ErrNoStream
	}
	raw, err := encode(params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return out.Write(ctx, &jsonrpc.Request{Method: method, Params: raw})
}

// Log sends a log message on the session's own stream, if the client asked
// for messages of its level.
func (s *Session) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	if !s.wantsLog(p.Level) {
		return nil
	}
	return s.Notify(ctx, "notifications/message", p)
}

func (s *Session) wantsLog(l mcp.LoggingLevel) bool {
	want := s.LogLevel()
	return want != "" && LevelRank(l) >= LevelRank(want)
}

// Ask sends a request to the client on the session's own stream and waits
// for the answer.
func (s *Session) Ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return s.askOn(ctx, s.stream(), method, params)
}

func (s *Session) askOn(ctx context.Context, out Stream, method string, params any) (json.RawMessage, error) {
	if out == nil {
		return nil, ErrNoStream
	}
	raw, err := encode(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	id, _ := jsonrpc.MakeID("sb-" + strconv.FormatInt(s.nextAskID.Add(1), 10))
	ch := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.asks[id] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.asks, id)
		s.mu.Unlock()
	}
	if err := out.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		forget()
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		forget()
		_ = s.notifyOn(context.WithoutCancel(ctx), out, "notifications/cancelled", &mcp.CancelledParams{RequestID: id.Raw(), Reason: ctx.Err().Error()})
		return nil, ctx.Err()
	case <-s.done:
		return nil, ErrClosed
	}
}

// Close ends the session: requests in flight are cancelled, requests to
// the client fail, OnClose runs, and Close waits for the goroutines Go
// started. It is idempotent and safe for concurrent use.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		s.mu.Unlock()
		s.stop()
		s.wg.Wait()
		if s.opt.OnClose != nil {
			s.opt.OnClose(s)
		}
	})
}

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
	select {
	case s.slot <- struct{}{}:
	default:
		s.reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("too many requests in flight on this session (limit %d)", s.opt.MaxInFlight)})
		return
	}
	rctx, release, ok := s.begin(ctx, m, out)
	if !ok {
		<-s.slot
		return
	}
	// The slot, like the ID, is free before the answer goes out: a client
	// may send its next request as soon as it has the answer.
	j := job{ctx: rctx, release: func() { release(); <-s.slot }, m: m, out: out}
	select {
	case s.jobs <- j: // an idle worker takes it
	default:
		go s.worker(j)
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
		s.mu.Lock()
		ch := s.asks[m.ID]
		delete(s.asks, m.ID)
		s.mu.Unlock()
		if ch != nil {
			ch <- m
		}
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

// Drain waits until no request is in flight, or ctx is done.
func (s *Session) Drain(ctx context.Context) error {
	s.mu.Lock()
	if len(s.inflight) == 0 {
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
		s.mu.Lock()
		select {
		case <-s.initialState:
		default:
			close(s.initialState)
		}
		s.mu.Unlock()
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
		if s.opt.OnRootsChanged != nil {
			// Not on the reader: the callback may ask the client.
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				return
			}
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				s.opt.OnRootsChanged(s)
			}()
		}
	default:
		s.log.Debug("notification ignored", "method", r.Method)
	}
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
		s.reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("duplicate in-flight request ID %v", m.ID.Raw())})
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	s.inflight[m.ID] = cancel
	s.wg.Add(1)
	s.mu.Unlock()
	// The session's end cancels its requests too.
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }, true
}

// run answers a request begin put in flight. The ID is free again before
// the answer goes out: a client may reuse it as soon as it has the answer.
func (s *Session) run(ctx context.Context, release func(), m *jsonrpc.Request, out Stream) {
	defer s.wg.Done()
	r := &Request{Session: s, ID: m.ID, Method: m.Method, Params: m.Params, Extra: m.Extra, out: out}
	res, err := s.dispatch(ctx, r)
	s.mu.Lock()
	delete(s.inflight, m.ID)
	if len(s.inflight) == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
	s.mu.Unlock()
	release()
	// The answer is written even when the request was cancelled, with a
	// context that is not done, as JSON-RPC implementations do.
	s.reply(out, m.ID, res, err)
}

func (s *Session) dispatch(ctx context.Context, r *Request) (any, error) {
	switch r.Method {
	case "initialize":
		return s.initialize(r)
	case "ping":
		return json.RawMessage("{}"), nil
	case "server/discover":
		// A session is legacy: it lists the versions with a handshake, and
		// a 2026-07-28 client falls back to initialize.
		return &mcp.DiscoverResult{SupportedVersions: Versions, Capabilities: s.opt.Capabilities, Instructions: s.opt.Instructions}, nil
	}
	if !s.Initialized() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("method %q is invalid during session initialization", r.Method)}
	}
	if r.Method == "logging/setLevel" {
		return s.setLevel(r)
	}
	h := s.opt.Methods[r.Method]
	if h == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", r.Method)}
	}
	return h(ctx, r)
}

func (s *Session) initialize(r *Request) (any, error) {
	var p mcp.InitializeParams
	// The SDK's type keeps the roots capability in a field JSON does not
	// fill (RootsV2, its fix of go-sdk#607): it is read beside it.
	var roots struct {
		Capabilities struct {
			Roots *mcp.RootCapabilities `json:"roots"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "initialize: " + err.Error()}
	}
	if p.Capabilities != nil && json.Unmarshal(r.Params, &roots) == nil {
		p.Capabilities.RootsV2 = roots.Capabilities.Roots
	}
	version := Versions[0]
	if slices.Contains(Versions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s.mu.Lock()
	s.initialized, s.version, s.clientInfo, s.clientCaps = true, version, p.ClientInfo, p.Capabilities
	s.mu.Unlock()
	info := s.opt.ServerInfo
	if info == nil {
		info = &mcp.Implementation{Name: "switchboard"}
	}
	return &mcp.InitializeResult{ProtocolVersion: version, Capabilities: s.opt.Capabilities, ServerInfo: info, Instructions: s.opt.Instructions}, nil
}

func (s *Session) setLevel(r *Request) (any, error) {
	var p mcp.SetLoggingLevelParams
	if err := json.Unmarshal(r.Params, &p); err != nil || LevelRank(p.Level) == len(levels) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("logging/setLevel: unknown level %q", p.Level)}
	}
	s.mu.Lock()
	s.level = p.Level
	s.mu.Unlock()
	if s.opt.OnLevel != nil {
		s.opt.OnLevel(s, p.Level)
	}
	return json.RawMessage("{}"), nil
}

// reply writes a request's answer.
func (s *Session) reply(out Stream, id jsonrpc.ID, res any, err error) {
	resp := &jsonrpc.Response{ID: id}
	if err == nil {
		raw, eerr := encode(res)
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
		resp.Error = we
	}
	if werr := out.Write(context.WithoutCancel(s.ctx), resp); werr != nil {
		s.log.Debug("answer not delivered", "error", werr, "session_id", s.opt.ID)
	}
}

// encode is params or a result as JSON; a json.RawMessage as it is.
func encode(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	return json.Marshal(v)
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
}

// Notify sends a notification about the request on the request's stream.
func (r *Request) Notify(ctx context.Context, method string, params any) error {
	return r.Session.notifyOn(ctx, r.out, method, params)
}

// Log sends a log message on the request's stream, if the client asked for
// messages of its level.
func (r *Request) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	if !r.Session.wantsLog(p.Level) {
		return nil
	}
	return r.Notify(ctx, "notifications/message", p)
}

// Ask sends a request to the client on the request's stream and waits for
// the answer.
func (r *Request) Ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return r.Session.askOn(ctx, r.out, method, params)
}

// levels are the MCP log levels, least severe first.
var levels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LevelRank orders log levels; an unknown level ranks after every known one.
func LevelRank(l mcp.LoggingLevel) int {
	for i, x := range levels {
		if x == l {
			return i
		}
	}
	return len(levels)
}
