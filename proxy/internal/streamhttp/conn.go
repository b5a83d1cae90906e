package streamhttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/httpio"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

// writeTimeout bounds one write to a client: a client that stops reading
// its stream loses it instead of holding switchboard's goroutines.
const writeTimeout = 10 * time.Second

// conn is one session's connection: its POST streams and its standalone
// GET stream.
type conn struct {
	h    *Handler
	id   string
	sess *session.Session
	born int64 // when its ID was issued (unix ns; see Continuity.Issued)

	mu         sync.Mutex
	standalone session.Stream // a *rawStream or a GET's *stream; nil: none

	used atomic.Int64 // when a request of the session last began or ended (unix ns)
	busy atomic.Int32 // its requests and streams in progress

	streams  atomic.Int64       // numbers its resumable streams
	detached map[string]*stream // resumable streams nobody reads (resume.go); under mu
}

// touch notes activity on the session now.
func (c *conn) touch() { c.used.Store(time.Now().UnixNano()) }

// enter and leave bracket one request of the session: a session with a
// request or stream in progress is never idle.
func (c *conn) enter() { c.busy.Add(1); c.touch() }
func (c *conn) leave() { c.touch(); c.busy.Add(-1) }

// idleSince reports whether the session has had nothing in progress and no
// activity since cutoff (unix ns).
func (c *conn) idleSince(cutoff int64) bool {
	return c.busy.Load() == 0 && c.used.Load() < cutoff
}

// stream is one hanging response: a POST's SSE stream or the GET stream.
// It is a session.Stream: the session writes a POST's answers, and
// everything about the POST's requests, to the POST's own stream.
type stream struct {
	mu     sync.Mutex
	w      http.ResponseWriter // nil once its request is over
	hold   httpio.Hold         // ending: release began or nobody reads; a write in progress gives up
	calls  unanswered          // a POST stream's unanswered calls
	done   chan struct{}       // a POST stream: closed with the last answer
	wrote  bool                // an event was written: the headers are out
	broken chan struct{}       // the GET stream: closed when a write failed
	modern bool                // answers a 2026-07-28 request (see errorStatus)
	http1  bool                // its connection serves one request at a time
	lone   bool                // a POST of one call, not in a batch (see Write)
	plain  *plainBuf           // what the plain answer being written was encoded in

	// A resumable POST stream watches its request from its first event
	// on (see watch): the POST's request while it is served, its
	// connection, and what stops the watch.
	req     *http.Request
	c       *conn
	unwatch func() bool

	// A resumable stream (resume.go): its ID ("": not resumable), the
	// number of its last event, what was written while nobody read.
	id       string
	seq      int
	kept     []kept
	dropped  int
	detached bool          // nobody reads: writes are kept
	finished bool          // every call of the POST is answered
	since    time.Time     // when it was detached
	paused   chan struct{} // closed by Pause; nil once closed or not resumable
}

var (
	_ session.Stream   = (*stream)(nil)
	_ session.Lingerer = (*stream)(nil)
)

// serve delivers one checked POST body to the session and, when it holds
// calls, streams their answers back.
func (c *conn) serve(w http.ResponseWriter, r *http.Request, in incoming) {
	c.enter()
	defer c.leave()
	// The requests keep the values of the HTTP request (the principal),
	// not its cancellation: a client that disconnects has not cancelled.
	// In protocol 2026-07-28 it has: closing the stream is how it cancels.
	ctx := r.Context()
	if !in.modern {
		ctx = context.WithoutCancel(ctx)
	}
	if len(in.calls) == 0 {
		for _, m := range in.msgs {
			c.sess.Handle(ctx, m, c)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s := &stream{w: w, calls: expecting(len(in.calls)), done: make(chan struct{}), modern: in.modern, http1: r.ProtoMajor < 2, lone: len(in.calls) == 1 && !in.batch}
	s.hold.Use(w)
	if !in.modern && c.id != "" && r.Header.Get(protocolVersionHeader) >= resumableFrom {
		s.id = c.h.streamID(c.streams.Add(1))
		s.paused = make(chan struct{})
		s.req, s.c = r, c
	}
	for _, req := range in.calls {
		if !s.calls.add(req.ID) {
			writeError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{
				Code:    jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("duplicate request ID %v in one batch", req.ID.Raw()),
			})
			return
		}
	}
	if in.init {
		w.Header().Set(sessionIDHeader, c.id)
	}
	// A lone call runs on this goroutine; a batch's calls run on the
	// session's, as a server's would. Other messages are handled in order.
	lone := len(in.msgs) == 1
	for _, m := range in.msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if lone {
				c.sess.Handle(ctx, m, s)
			} else {
				c.sess.Go(ctx, m, s)
			}
			continue
		}
		c.sess.Handle(ctx, m, c)
	}
	s.mu.Lock()
	paused := s.paused
	s.mu.Unlock()
	select {
	case <-r.Context().Done():
	case <-s.done:
	case <-paused:
	case <-c.sess.Done():
		// A closing session answers its requests in flight (cancelled)
		// before it has closed: the answers still go out.
		select {
		case <-s.done:
		case <-c.sess.Ended():
		case <-r.Context().Done():
		}
	}
	s.mu.Lock()
	if s.w != nil && !s.wrote {
		// Nothing was written: an event stream with no events, which a
		// client reads as a stream that ended.
		sseHeaders(s.w.Header())
	}
	unwatch := s.unwatch
	s.req, s.unwatch = nil, nil
	s.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
	s.release()
	c.detach(s)
}

// Listening implements session.Listener: what has no request stream of
// its own has somewhere to go while a standalone GET stream is open.
func (c *conn) Listening() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.standalone != nil
}

// Write implements session.Stream for what has no request stream of its
// own: it goes to the standalone GET stream, if one is open.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	s := c.standalone
	c.mu.Unlock()
	if s == nil {
		return session.ErrNoStream
	}
	return s.Write(ctx, msg)
}

// watch makes a client that leaves a resumable POST stream seen at once,
// even while a lone call runs on the goroutine serving the POST: the
// stream is detached and what the call writes from then on is kept. It
// begins with the stream's first event that does not end it (written or
// not), the first that can give the client an event ID to resume from; a
// stream answered in one write needs none (a context.AfterFunc per call).
// s.mu held.
func (s *stream) watch() {
	if s.req == nil || s.unwatch != nil {
		return
	}
	s.unwatch = context.AfterFunc(s.req.Context(), func() { s.c.lost(s) })
}

// release ends the stream's hold on its response writer. A write blocked
// on a client that does not read gives up at once instead of at its
// deadline.
func (s *stream) release() { s.hold.Release(&s.mu, func() { s.w = nil }) }

// Linger implements session.Lingerer: the POST's request is answered
// while it goes on, on the goroutine serving the POST (a 2026-07-28 call
// that asked for input). An HTTP/1 connection serves nothing else until
// then, so the answer tells the client not to reuse it, when its headers
// are still to go. (When they went out, the client holds this response
// until its end anyway: its next request takes another connection.)
func (s *stream) Linger() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http1 && s.w != nil && !s.wrote {
		s.w.Header().Set("Connection", "close")
	}
}

// Write implements session.Stream: one SSE event, flushed, within
// writeTimeout. The answer to a POST's last call ends the stream. The
// answer to a lone call that is the first thing written is the whole
// response instead, as application/json (which a client must accept as
// well as an event stream): nothing was streamed before it and nothing
// can follow it, and a client reads one JSON value with less work than
// an event stream. The go-sdk's client spends about a tenth less CPU per
// call on it: no stream reader, no goroutine of its own growing its stack.
func (s *stream) Write(_ context.Context, msg jsonrpc.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	plain := s.lone && !s.wrote && s.w != nil
	event, answer, last, wasFinished, err := s.next(msg, plain)
	if err != nil {
		return err
	}
	plain = plain && last
	if s.w == nil {
		if s.id != "" && !wasFinished && (s.detached || s.hold.Ending()) {
			s.keep(event, answer) // for a GET that takes the stream up (resume.go)
			if last {
				close(s.done)
			}
			return nil
		}
		return fmt.Errorf("%w: stream closed", session.ErrNoStream)
	}
	if last && !s.wrote && s.modern && s.wholeAnswer(msg) {
		return nil
	}
	out := event
	switch {
	case plain:
		s.w.Header().Set("Content-Type", "application/json")
	case !s.wrote:
		// An event stream's headers go with its first event, and so
		// does the priming event of a resumable one: one write still
		// carries a lone answer.
		sseHeaders(s.w.Header())
		if s.id != "" {
			out = append(s.appendPriming(make([]byte, 0, len(s.id)+32+len(event))), event...)
		}
	}
	if last && !s.wrote {
		// The POST's only write: with its length known, net/http sends
		// the headers and the body in the one write of the flush below,
		// and the response has no chunked ending left to write when the
		// handler returns (a second write, and a second wake-up of the
		// client, per answered call).
		s.w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	}
	s.wrote = true
	// Flushed even when it is the last: a shutdown that waits for POST
	// handlers closes the connections once they return, which can be
	// before net/http wrote what the handler left buffered.
	err = s.hold.WriteFlush(s.w, out, writeTimeout)
	if plain && err == nil {
		// Written and flushed: nothing holds out any more. After a
		// failed write an HTTP/2 frame may still, and the buffer is
		// left to the collector.
		s.plain.reuse(out)
		s.plain = nil
	}
	if last {
		s.w = nil
		close(s.done)
	} else {
		s.watch()
	}
	if err != nil {
		s.w = nil
		if s.broken != nil {
			close(s.broken)
		}
		if s.id != "" && !plain {
			s.keep(event, answer) // for a GET that takes the stream up
			return nil
		}
		return fmt.Errorf("stream write: %w", err)
	}
	return nil
}

// next encodes msg, as the stream's next event (with its ID on a
// resumable stream), or as plain JSON when plain and it answers the POST's
// last call, and notes whether it answers one of the POST's calls and the
// last of them; s.mu held.
func (s *stream) next(msg jsonrpc.Message, plain bool) (event []byte, answer, last, wasFinished bool, err error) {
	r, ok := msg.(*jsonrpc.Response)
	answer = ok && s.calls.has(r.ID)
	last = answer && s.calls.len() == 1
	if plain && last {
		event, s.plain, err = encodePlain(msg)
	} else {
		var id string
		if s.id != "" {
			s.seq++
			id = s.eventID(s.seq)
		}
		event, err = encodeEvent(msg, id)
	}
	if err != nil {
		return nil, false, false, false, err
	}
	if answer {
		s.calls.remove(r.ID)
	}
	wasFinished = s.finished
	if last {
		s.finished = true
	}
	return event, answer, last, wasFinished, nil
}

// wholeAnswer writes a 2026-07-28 request's protocol error as the whole
// answer, with its HTTP status (SEP-2575), and reports whether it did;
// s.mu held.
func (s *stream) wholeAnswer(msg jsonrpc.Message) bool {
	status := errorStatus(msg)
	if status == 0 {
		return false
	}
	r := msg.(*jsonrpc.Response)
	writeError(s.w, status, r.ID, r.Error.(*jsonrpc.Error))
	s.wrote = true
	s.w = nil
	close(s.done)
	return true
}

// encodePlain is msg as JSON, the whole body of a response, in a buffer
// from plainBufs: the response is written before the POST's handler
// returns, and the buffer goes back (reuse) once it is.
func encodePlain(msg jsonrpc.Message) ([]byte, *plainBuf, error) {
	pb, _ := plainBufs.Get().(*plainBuf)
	if pb == nil {
		pb = new(plainBuf)
	}
	out, err := appendMessage(msg, func(n int) []byte {
		if cap(pb.b) >= n {
			return pb.b[:0]
		}
		return make([]byte, 0, n)
	})
	return out, pb, err
}

// plainBufs keeps the buffers of plain answers: about one for each
// answer being written at a time.
var plainBufs sync.Pool

// plainBuf is a buffer of plainBufs.
type plainBuf struct{ b []byte }

// maxPlainBuf is the largest buffer plainBufs keeps: a large answer's
// buffer would hold its size for every small one after it.
const maxPlainBuf = 16 << 10

// reuse gives pb back to plainBufs with out, what encodePlain wrote in
// it, written and referenced nowhere else.
func (pb *plainBuf) reuse(out []byte) {
	if cap(out) <= maxPlainBuf {
		pb.b = out[:0]
		plainBufs.Put(pb)
	}
}

// encodeEvent is msg as one SSE message event, with event ID id if it is
// not "".
func encodeEvent(msg jsonrpc.Message, id string) ([]byte, error) {
	const head, tail = "event: message\ndata: ", "\n\n"
	idLen := 0
	if id != "" {
		idLen = len("id: \n") + len(id)
	}
	event, err := appendMessage(msg, func(n int) []byte {
		buf := make([]byte, 0, idLen+len(head)+n+len(tail))
		if id != "" {
			buf = append(append(append(buf, "id: "...), id...), '\n')
		}
		return append(buf, head...)
	})
	if err != nil {
		return nil, err
	}
	return append(event, tail...), nil
}

// appendMessage appends msg's JSON to what start makes, given the room the
// JSON needs (start may leave more, for what goes after it): a simple
// result's response written around its result's bytes, anything else by
// the SDK's encoder.
func appendMessage(msg jsonrpc.Message, start func(n int) []byte) ([]byte, error) {
	if r, ok := msg.(*jsonrpc.Response); ok {
		// 48: the envelope around the result, with an ID of up to 20 bytes.
		if out := wire.AppendResponse(start(48+len(r.Result)), r); out != nil {
			return out, nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	return append(start(len(data)), data...), nil
}

// get serves the standalone stream until the client goes away or the
// session ends: on the connection taken from net/http where it can be
// (rawstream.go), else held by net/http until then.
func (c *conn) get(w http.ResponseWriter, r *http.Request) {
	c.enter()
	c.mu.Lock()
	if c.standalone != nil {
		c.mu.Unlock()
		c.leave()
		http.Error(w, "stream ID conflicts with ongoing stream", http.StatusConflict)
		return
	}
	if rs, head := c.takeOver(w, r); rs != nil {
		c.standalone = rs
		rs.mu.Lock()
		c.mu.Unlock()
		rs.serve(head) // the stream's end leaves
		// A session that closed before the stream was in place found no
		// stream to end.
		select {
		case <-c.sess.Done():
			rs.end(true)
		default:
		}
		return
	}
	defer c.leave()
	s := &stream{w: w, broken: make(chan struct{})}
	s.hold.Use(w)
	c.standalone = s
	// Headers and a comment go out at once: a standalone stream may stay
	// silent for long, and proxies hold back headers without a body.
	s.mu.Lock()
	c.mu.Unlock()
	sseHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, ": ok\n\n")
	_ = s.hold.Flush()
	s.mu.Unlock()

	// A failed write ends the stream: the client sees it close and may
	// open another.
	select {
	case <-r.Context().Done():
	case <-c.sess.Done():
	case <-s.broken:
	}
	s.release()
	c.mu.Lock()
	if c.standalone == s {
		c.standalone = nil
	}
	c.mu.Unlock()
}

// errorStatus is the HTTP status SEP-2575 gives a 2026-07-28 request's
// protocol error when it is the POST's whole answer (0: none, the answer
// is an event): method not found is 404; invalid params, an unsupported
// version and a missing client capability are 400.
func errorStatus(msg jsonrpc.Message) int {
	r, ok := msg.(*jsonrpc.Response)
	if !ok || r.Error == nil {
		return 0
	}
	we, ok := r.Error.(*jsonrpc.Error)
	if !ok {
		return 0
	}
	switch we.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}
