package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

const (
	headerSessionID   = "Mcp-Session-Id"
	headerProtocol    = "Mcp-Protocol-Version"
	headerLastEventID = "Last-Event-ID"

	defaultMaxMessage = 16 << 20
	// deleteTimeout bounds the DELETE that Close sends: a server that
	// accepts the connection and never answers must not hold Close.
	deleteTimeout = 2 * time.Second
	// errorSnippet is how much of an error response's body an error quotes.
	errorSnippet = 200
	// incomingQueue is how many messages may wait for Read; a stream whose
	// next message finds the queue full waits, which keeps its order.
	incomingQueue = 16
)

// relatedRequest is the Extra of a request or notification that arrived on
// the stream of a POST: ID is the request that POST carried, so that the
// client session can hand it to that call (progress, log messages, and
// server requests made on behalf of the call).
type relatedRequest struct{ ID jsonrpc.ID }

// streamableTransport connects to a streamable HTTP MCP endpoint as a client
// (spec 2025-11-25, "Streamable HTTP"). Unlike the go-sdk's
// StreamableClientTransport, its connection needs no hook from the SDK's
// ClientSession: it learns the session ID and protocol version by watching
// the initialize exchange itself, and opens the standalone GET stream when
// the client writes notifications/initialized. That lets any client session
// drive it through mcp.Connection alone.
type streamableTransport struct {
	// URL is the MCP endpoint.
	URL string
	// Client sends every request: POST, GET and DELETE. It carries the
	// configured headers and trace propagation (headerTransport). It must
	// not be nil, and should have no Timeout, which would cut long streams.
	Client *http.Client
	// MaxMessageBytes bounds one JSON body, and one SSE line or event's
	// data. If zero, 16 MiB is used.
	MaxMessageBytes int
	// Logger reports what the connection deals with itself and no caller
	// sees: a request's stream that ended or broke before its response, a
	// message that did not decode. If nil, nothing is logged.
	Logger hclog.Logger
}

// Connect returns a connection; it sends nothing. The connection's own
// requests (the standalone stream, DELETE) keep the values of ctx, such as
// trace context, but not its deadline.
func (t *streamableTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.Client == nil {
		return nil, errors.New("streamable http: connect: no http client")
	}
	if _, err := http.NewRequest(http.MethodPost, t.URL, nil); err != nil {
		return nil, fmt.Errorf("streamable http: connect: %w", err)
	}
	limit := t.MaxMessageBytes
	if limit <= 0 {
		limit = defaultMaxMessage
	}
	log := t.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &streamableConn{
		url: t.URL, client: t.Client, max: limit, log: log,
		incoming: make(chan jsonrpc.Message, incomingQueue),
		failed:   make(chan struct{}),
		closed:   make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return c, nil
}

// streamableConn is the mcp.Connection of streamableTransport. Write posts
// one message and returns once the response's headers are checked; one
// goroutine per response stream (and one for the standalone GET stream)
// then reads it and hands its messages to Read in the order the server
// wrote them. All goroutines belong to the connection: Close cancels them
// and waits.
type streamableConn struct {
	url    string
	client *http.Client
	max    int
	log    hclog.Logger

	ctx    context.Context // the connection's lifetime; Close cancels it
	cancel context.CancelFunc

	incoming chan jsonrpc.Message
	// direct takes a call's response that is the first message of its
	// stream, on the goroutine that read it (see setDirect); nil: Read
	// hands on every message.
	direct func(*jsonrpc.Response)

	failOnce sync.Once
	failErr  error
	failed   chan struct{} // closed when failErr is set

	mu        sync.Mutex
	sessionID string
	proto     string
	initID    jsonrpc.ID // the initialize request whose response is awaited
	listening bool       // the standalone stream was started
	closing   bool       // no goroutine may start
	wg        sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

// SessionID returns the session ID the server assigned in its answer to
// initialize, or "" (none yet, or a sessionless server).
func (c *streamableConn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// Read returns the next message. Once the connection failed (the session
// is gone: mcp.ErrSessionMissing) it returns that error; once closed, io.EOF,
// as the line connection does; when ctx ends, ctx.Err(). Read is meant for
// one goroutine, concurrently with Write and Close.
func (c *streamableConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-c.failed:
		return nil, c.failErr
	case <-c.closed:
		return nil, io.EOF
	default:
	}
	select {
	case m := <-c.incoming:
		return m, nil
	case <-c.failed:
		return nil, c.failErr
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fail ends the connection for Read and Write; Close still has to be called.
func (c *streamableConn) fail(err error) {
	c.failOnce.Do(func() {
		c.failErr = err
		close(c.failed)
	})
}

func (c *streamableConn) failure() error {
	select {
	case <-c.failed:
		return c.failErr
	default:
		return nil
	}
}

// Write posts msg. It returns once the response's headers arrived and were
// checked, so a refusal (4xx, 5xx, a vanished session) is Write's error; for
// a server that sends headers only with its first event (the go-sdk's), that
// may be when the call's first message is ready. The rest of the response is
// read by a goroutine of the connection.
//
// A request's POST is cancelled with ctx: a cancelled call stops reading its
// stream. A notification's or response's POST keeps ctx's values but lives as
// long as the connection, because such messages are often written on the
// context of a call that was just cancelled (notifications/cancelled). Write
// is safe for concurrent use.
func (c *streamableConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := c.failure(); err != nil {
		return err
	}
	select {
	case <-c.closed:
		return fmt.Errorf("streamable http: post: %w", mcp.ErrConnectionClosed)
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("streamable http: encode: %w", err)
	}
	req, _ := msg.(*jsonrpc.Request)
	call := req != nil && req.IsCall()
	method := "response"
	if req != nil {
		method = req.Method
	}
	if call && req.Method == "initialize" {
		c.mu.Lock()
		c.initID = req.ID
		c.mu.Unlock()
	}

	p := c.newPost(ctx, call, method)
	if call {
		p.id = req.ID
		if modernRequest(req.Params) {
			p.modern = req
		}
	}
	resp, err := p.send(data)
	if err != nil {
		return err
	}
	if !call {
		// The spec answers 202 Accepted without a body; some servers send
		// 200 with one, which carries nothing for us.
		closeBody(resp)
		p.release()
		if req != nil && req.Method == "notifications/initialized" {
			c.startListening()
		}
		return nil
	}
	return p.readResponse(resp, req)
}

// streamablePost is one POST of Write, from sending it until its response
// is read.
type streamablePost struct {
	c      *streamableConn
	method string // the message's method, or "response"
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool      // detaches cancel from the connection's lifetime
	modern *jsonrpc.Request // a 2026-07-28 request: its headers, no session
	id     jsonrpc.ID       // a call's
}

// newPost prepares a POST carrying method. Its context ends when the
// connection closes, and, for a call, when ctx ends; a notification's or
// response's POST keeps only ctx's values (see Write).
func (c *streamableConn) newPost(ctx context.Context, call bool, method string) *streamablePost {
	base := ctx
	if !call {
		base = context.WithoutCancel(ctx)
	}
	p := &streamablePost{c: c, method: method}
	p.ctx, p.cancel = context.WithCancel(base)
	p.stop = context.AfterFunc(c.ctx, p.cancel)
	return p
}

// release ends the POST's context.
func (p *streamablePost) release() { p.stop(); p.cancel() }

// abort closes resp's body if there is one, releases the POST and returns
// err in the form Write returns it. A cancellation caused by Close becomes
// mcp.ErrConnectionClosed.
func (p *streamablePost) abort(resp *http.Response, err error) error {
	if resp != nil {
		closeBody(resp)
	}
	p.release()
	if errors.Is(err, context.Canceled) && p.c.ctx.Err() != nil {
		err = mcp.ErrConnectionClosed
	}
	return fmt.Errorf("streamable http: post %s: %w", p.method, err)
}

// send posts data and checks the response's status. On error the POST is
// released, and a session the server no longer knows fails the connection.
func (p *streamablePost) send(data []byte) (*http.Response, error) {
	c := p.c
	hreq, sent, err := c.newRequest(p.ctx, http.MethodPost, bytes.NewReader(data))
	if err != nil {
		return nil, p.abort(nil, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, text/event-stream")
	if p.modern != nil {
		modernHeaders(hreq.Header, p.modern)
		if p.modern.Method == "tools/call" {
			setParamHeaders(p.ctx, hreq.Header, p.modern.Params)
		}
		sent = false
	}
	resp, err := c.client.Do(hreq)
	if err != nil {
		if p.id.IsValid() && errors.Is(err, oauth.ErrConsentAsked) {
			// The call's caller was asked for the consent the server
			// needs: the call is answered here, and the connection, which
			// a failed write would end, stays.
			return p.localError(err)
		}
		return nil, p.abort(nil, err)
	}
	if p.modern != nil && resp.StatusCode >= 400 && resp.StatusCode < 500 && mediaType(resp.Header.Get("Content-Type")) == "application/json" {
		return p.protocolError(resp)
	}
	if err := checkStatus(resp, sent); err != nil {
		err = p.abort(nil, err)
		if errors.Is(err, mcp.ErrSessionMissing) {
			c.fail(err)
		}
		return nil, err
	}
	return resp, nil
}

// readResponse takes the session ID from the answer to initialize, then
// hands the body of req's response, an event stream or JSON, to a
// goroutine of the connection that reads it and releases the POST.
func (p *streamablePost) readResponse(resp *http.Response, req *jsonrpc.Request) error {
	c := p.c
	if sid := resp.Header.Get(headerSessionID); sid != "" && req.Method == "initialize" {
		if !validSessionID(sid) {
			return p.abort(resp, errors.New("session ID with characters outside visible ASCII"))
		}
		c.mu.Lock()
		c.sessionID = sid
		c.mu.Unlock()
	}

	var read func()
	switch ct := mediaType(resp.Header.Get("Content-Type")); ct {
	case "text/event-stream":
		read = func() { c.readPostStream(p.ctx, p.cancel, resp, req) }
	case "application/json":
		if resp.ContentLength > int64(c.max) {
			return p.abort(resp, fmt.Errorf("body of %d bytes: %w (%d bytes)", resp.ContentLength, errTooLarge, c.max))
		}
		read = func() { c.readPostJSON(p.ctx, resp, req) }
	default:
		return p.abort(resp, fmt.Errorf("response of content type %q", ct))
	}
	if !c.goOwned(func() { defer p.release(); read() }) {
		return p.abort(resp, mcp.ErrConnectionClosed)
	}
	return nil
}

func (c *streamableConn) newRequest(ctx context.Context, method string, body io.Reader) (*http.Request, bool, error) {
	r, err := http.NewRequestWithContext(ctx, method, c.url, body)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	sid, proto := c.sessionID, c.proto
	c.mu.Unlock()
	if sid != "" {
		r.Header.Set(headerSessionID, sid)
	}
	if proto != "" {
		r.Header.Set(headerProtocol, proto)
	}
	return r, sid != "", nil
}

// goOwned starts f on a goroutine that Close waits for, unless Close began.
func (c *streamableConn) goOwned(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.wg.Go(f)
	return true
}

// readPostJSON reads a JSON body answering req: one message, or a batch,
// in which a server may send the call's notifications before its response.
func (c *streamableConn) readPostJSON(ctx context.Context, resp *http.Response, req *jsonrpc.Request) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.max)+1))
	if err != nil {
		if ctx.Err() == nil {
			c.lose(ctx, req, err)
		}
		return
	}
	if len(body) > c.max {
		c.report(req.Method, fmt.Errorf("body: %w (%d bytes)", errTooLarge, c.max))
		return
	}
	msgs, err := decodeBody(body)
	if err != nil {
		c.report(req.Method, err)
		return
	}
	if len(msgs) == 1 && c.handOn(msgs[0], req.ID) {
		return
	}
	answered := false
	for _, m := range msgs {
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == req.ID {
			answered = true
		}
		if !c.deliver(ctx, m, req.ID) {
			return
		}
	}
	if !answered {
		c.report(req.Method, errors.New("body without the response"))
	}
}

// deliver hands m to Read, waiting while the queue is full so that one
// stream's messages keep their order. It reports false if ctx ended first.
// Before the answer to initialize goes out, it takes the protocol version
// from it: the client's next write must already carry the header.
func (c *streamableConn) deliver(ctx context.Context, m jsonrpc.Message, call jsonrpc.ID) bool {
	switch m := m.(type) {
	case *jsonrpc.Request:
		if call.IsValid() {
			m.Extra = relatedRequest{ID: call}
		}
	case *jsonrpc.Response:
		c.noteInitialize(m)
	}
	select {
	case c.incoming <- m:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *streamableConn) noteInitialize(r *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.initID.IsValid() || r.ID != c.initID {
		return
	}
	c.initID = jsonrpc.ID{}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if r.Error == nil && json.Unmarshal(r.Result, &res) == nil {
		c.proto = res.ProtocolVersion
	}
}

// report logs a request's stream that failed before its response: only the
// connection knows.
func (c *streamableConn) report(method string, err error) {
	c.log.Warn("request stream lost", "method", method, "error", err)
}

// errStreamLost fails a call whose request's stream ended or broke before
// its response and could not be resumed.
var errStreamLost = errors.New("request stream lost before the response")

// lose reports a request's stream that ended or broke before its response
// and fails the call at once with errStreamLost, instead of leaving it to
// its timeout: the server is likely gone (the Handle pings it to find
// out). A response over the size limit, or one that does not decode, is
// only reported: the server is there, and the call times out.
func (c *streamableConn) lose(ctx context.Context, req *jsonrpc.Request, err error) {
	c.report(req.Method, err)
	if errors.Is(err, errTooLarge) {
		return
	}
	c.deliver(ctx, &jsonrpc.Response{ID: req.ID, Error: fmt.Errorf("%w: %s: %w", errStreamLost, req.Method, err)}, jsonrpc.ID{})
}

// Close ends the session: it sends DELETE (bounded by deleteTimeout) when
// there is a session the server has not already dropped, cancels every
// stream and waits for the connection's goroutines. After Close, Read
// returns io.EOF and Write an error wrapping mcp.ErrConnectionClosed. Close
// is idempotent and safe to call concurrently; every call returns the
// DELETE's error, if any.
func (c *streamableConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		sid := c.sessionID
		c.mu.Unlock()
		close(c.closed)
		if sid != "" && !errors.Is(c.failure(), mcp.ErrSessionMissing) {
			c.closeErr = c.deleteSession()
		}
		c.cancel()
		c.wg.Wait()
	})
	return c.closeErr
}

func (c *streamableConn) deleteSession() error {
	ctx, cancel := context.WithTimeout(c.ctx, deleteTimeout)
	defer cancel()
	req, sent, err := c.newRequest(ctx, http.MethodDelete, nil)
	if err != nil {
		return fmt.Errorf("streamable http: delete: %w", err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("streamable http: delete: %w", err)
	}
	// 405: the server does not let clients end sessions (spec); 404: it
	// already ended this one.
	if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound {
		closeBody(resp)
		return nil
	}
	if err := checkStatus(resp, sent); err != nil {
		return fmt.Errorf("streamable http: delete: %w", err)
	}
	closeBody(resp)
	return nil
}

// decodeBody decodes one JSON body or one event's data: a message, or a
// batch. The messages alias data.
func decodeBody(data []byte) ([]jsonrpc.Message, error) {
	msgs, _, err := wire.Decode(data)
	return msgs, err
}

// closeBody reads the rest of a short body of known length, so that it
// does not cost the pooled connection, and closes it. A body of unknown
// length may be a stream that never ends: it is closed unread.
func closeBody(resp *http.Response) {
	if resp.ContentLength >= 0 && resp.ContentLength <= 4<<10 {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
}

func mediaType(ct string) string {
	ct, _, _ = strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(ct))
}

// validSessionID holds for the characters the spec allows in a session ID
// (visible ASCII); anything else would be refused as a header value or
// smuggle one.
func validSessionID(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// modernHeaders sets the headers of a 2026-07-28 request (SEP-2243): its
// version and method, and what it names; it carries no session.
func modernHeaders(h http.Header, req *jsonrpc.Request) {
	h.Del(headerSessionID)
	h.Set(headerProtocol, Modern)
	h.Set("Mcp-Method", req.Method)
	field := ""
	switch req.Method {
	case "tools/call", "prompts/get":
		field = "name"
	case "resources/read":
		field = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		field = "taskId" // SEP-2663's routing header
	}
	if field == "" {
		return
	}
	var p map[string]json.RawMessage
	var name string
	if json.Unmarshal(req.Params, &p) == nil && json.Unmarshal(p[field], &name) == nil {
		h.Set("Mcp-Name", name)
	}
}
