package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerTail is how long a request's stream may stay open after its
// response. The spec says the server SHOULD end it then; one that does not
// would otherwise hold a goroutine until the call's context ends.
const answerTail = time.Second

// noStandaloneFrom is the first protocol version without the standalone
// GET stream (SEP-2575).
const noStandaloneFrom = "2026-07-28"

// Standalone stream reconnection: the first delay, doubled after each
// attempt that delivered nothing, up to the cap. A server's retry field,
// once given, is the delay after each stream that ends, up to
// listenRetryMax.
var (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
	listenRetryMax   = 30 * time.Second
	// listenMaxFailures consecutive attempts that reach no server end the
	// connection: the server is gone, and the Handle reconnects.
	listenMaxFailures = 5
)

// sseLineSlack is what a line may hold beyond the data limit: the field
// name, so that data of exactly the limit still fits on its line.
const sseLineSlack = 16

// errTooLarge fails a stream whose body, line or event data is over the
// connection's MaxMessageBytes.
var errTooLarge = errors.New("message over the size limit")

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	name string // the event type; empty means "message"
	data []byte // the data lines joined by "\n", in an allocation of its own
}

// sseReader parses a text/event-stream body as the HTML standard's "event
// stream interpretation" says, with two bounds, so that a hostile server
// cannot make it buffer more: no event's data may be longer than max bytes,
// and no line longer than max+sseLineSlack. Lines end in LF, CRLF or a lone
// CR.
//
// One deliberate departure: an event still open when the body ends cleanly
// (io.EOF, not a broken connection) is dispatched rather than dropped, as the
// go-sdk's reader does; a server that ends its response after the last data
// line meant that event to count.
type sseReader struct {
	br      *bufio.Reader
	max     int
	line    []byte // reused between lines
	skipLF  bool   // the last line ended in CR: an LF next belongs to it
	started bool   // past the first line, where a byte order mark may sit
	err     error  // sticky: the body ended or broke

	idBuf string // the last event ID buffer: set by id fields, kept across events
	// lastID is the last event ID as of the last dispatched or ended event,
	// to send as Last-Event-ID when reconnecting.
	lastID string
	// retry is the reconnection time from the last valid retry field; zero
	// if none came.
	retry time.Duration
}

// sseBuffers holds the read buffers of streams that ended: a call's
// response stream is read once and closed, and a fresh 16 KiB buffer for
// every call to a streamable HTTP server was most of what such a call
// allocated.
var sseBuffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

func newSSEReader(r io.Reader, limit int) *sseReader {
	br := sseBuffers.Get().(*bufio.Reader)
	br.Reset(r)
	return &sseReader{br: br, max: limit}
}

// release gives the reader's buffer back for another stream; s must not be
// read again. Nothing read aliases the buffer: lines are copied out of it
// (readLine), and event data and fields are copies too.
func (s *sseReader) release() {
	if s.br == nil {
		return
	}
	s.br.Reset(nil)
	sseBuffers.Put(s.br)
	s.br = nil
	if s.err == nil {
		s.err = io.ErrClosedPipe
	}
}

// next returns the next event with data. Events without a data field only
// move lastID, as in a browser. The error is io.EOF when the body ended
// cleanly, and wraps errTooLarge when a line or an event is over the limit.
func (s *sseReader) next() (sseEvent, error) {
	var (
		ev      sseEvent
		hasData bool
	)
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				s.lastID = s.idBuf
				return ev, nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			s.lastID = s.idBuf
			if hasData {
				return ev, nil
			}
			ev.name = ""
			continue
		}
		if line[0] == ':' {
			continue // a comment, such as a keep-alive
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			n := len(ev.data) + len(value)
			if hasData {
				n++
			}
			if n > s.max {
				return sseEvent{}, fmt.Errorf("event data: %w (%d bytes)", errTooLarge, s.max)
			}
			if hasData {
				ev.data = append(ev.data, '\n')
			}
			// A fresh array per event: decoded messages alias it.
			ev.data = append(ev.data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.idBuf = string(value)
			}
		case "retry":
			if ms, ok := parseRetry(value); ok {
				s.retry = ms
			}
		}
	}
}

// parseRetry accepts only ASCII digits, as the SSE spec does, and values
// that fit a Duration.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	for _, b := range v {
		if b < '0' || b > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n > math.MaxInt64/int64(time.Millisecond) {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// readLine returns the next line without its terminator, valid until the
// next call. A last line without a terminator counts when the body ends
// cleanly.
func (s *sseReader) readLine() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	line := s.line[:0]
	for {
		if s.br.Buffered() == 0 {
			if _, err := s.br.Peek(1); err != nil {
				s.err = err
				if len(line) > 0 && errors.Is(err, io.EOF) {
					return s.finish(line), nil
				}
				return nil, err
			}
		}
		buf, _ := s.br.Peek(s.br.Buffered())
		if s.skipLF {
			s.skipLF = false
			if buf[0] == '\n' {
				_, _ = s.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if len(line)+n > s.max+sseLineSlack {
			s.err = fmt.Errorf("line: %w (%d bytes)", errTooLarge, s.max+sseLineSlack)
			return nil, s.err
		}
		line = append(line, buf[:n]...)
		if i < 0 {
			_, _ = s.br.Discard(n)
			continue
		}
		s.skipLF = buf[i] == '\r'
		_, _ = s.br.Discard(i + 1)
		return s.finish(line), nil
	}
}

// finish keeps the line buffer for the next line unless one long line grew
// it: a long-lived stream should not pin a large buffer.
func (s *sseReader) finish(line []byte) []byte {
	if cap(line) <= 64<<10 {
		s.line = line
	} else {
		s.line = nil
	}
	if !s.started {
		s.started = true
		line = bytes.TrimPrefix(line, []byte("\ufeff"))
	}
	return line
}

// readPostStream reads the event stream answering req. Its messages go to
// Read in order; requests and notifications among them are marked as
// related to req. A stream that ends before the response is resumed when
// the server numbered its events (SEP-1699: a server may close a POST's
// stream and let the client continue it): a GET with Last-Event-ID, after
// the server's retry time, up to resumeAttempts times. One that cannot be
// resumed fails its call at once (lose).
func (c *streamableConn) readPostStream(ctx context.Context, cancel context.CancelFunc, resp *http.Response, req *jsonrpc.Request) {
	answered := false
	var tail *time.Timer
	defer func() {
		if tail != nil {
			tail.Stop()
		}
	}()
	onAnswer := func() {
		if !answered {
			answered = true
			tail = time.AfterFunc(answerTail, cancel)
		}
	}
	sr := newSSEReader(resp.Body, c.max)
	_, err := c.readEvents(ctx, sr, req.ID, true, onAnswer)
	resp.Body.Close()
	lastID, retry := sr.lastID, sr.retry
	sr.release()
	if !answered && ctx.Err() == nil && lastID != "" {
		// The server closed the stream to be polled (SEP-1699): the call's
		// caller may close its client's stream likewise.
		c.deliver(ctx, &jsonrpc.Request{Extra: streamPaused{call: req.ID, retry: retry}}, jsonrpc.ID{})
	}
	for attempt := 0; !answered && ctx.Err() == nil && lastID != "" && attempt < resumeAttempts; attempt++ {
		delay := retry
		if delay <= 0 {
			delay = listenBackoffMin << attempt
		}
		t := time.NewTimer(min(delay, listenRetryMax))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.failed:
			t.Stop()
			return
		}
		var gresp *http.Response
		if gresp, err = c.resume(ctx, lastID); err != nil {
			if errors.Is(err, errNoResume) {
				break
			}
			continue
		}
		sr = newSSEReader(gresp.Body, c.max)
		_, err = c.readEvents(ctx, sr, req.ID, false, onAnswer)
		gresp.Body.Close()
		sr.release()
		if sr.lastID != "" {
			lastID = sr.lastID
		}
		if sr.retry > 0 {
			retry = sr.retry
		}
	}
	if answered || ctx.Err() != nil {
		return
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("ended before the response")
	}
	c.lose(ctx, req, err)
}

// resumeAttempts bounds the GETs that continue one POST's stream.
const resumeAttempts = 5

// errNoResume: the server does not let this stream be continued.
var errNoResume = errors.New("stream cannot be resumed")

// resume opens the GET that continues a stream after lastID.
func (c *streamableConn) resume(ctx context.Context, lastID string) (*http.Response, error) {
	req, _, err := c.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoResume, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerLastEventID, lastID)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500,
		resp.StatusCode >= 200 && resp.StatusCode < 300 && mediaType(resp.Header.Get("Content-Type")) != "text/event-stream":
		closeBody(resp)
		return nil, fmt.Errorf("%w: %s", errNoResume, resp.Status)
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		closeBody(resp)
		return nil, fmt.Errorf("resume: %s", resp.Status)
	}
	return resp, nil
}

// readEvents hands the messages of sr's events to Read until the stream
// ends, breaks or ctx ends, and calls answered after delivering the
// response to call (if call is valid). On the first stream of a call
// (first), a response that is its first message goes to the direct
// function instead (handOn); a resumed stream's messages always go
// through Read, behind what its first part sent. It returns how many
// messages it delivered and the error that ended the stream (io.EOF: a
// clean end).
func (c *streamableConn) readEvents(ctx context.Context, sr *sseReader, call jsonrpc.ID, first bool, answered func()) (int, error) {
	n := 0
	for {
		ev, err := sr.next()
		if err != nil {
			return n, err
		}
		if ev.name != "" && ev.name != "message" || len(ev.data) == 0 {
			continue
		}
		msgs, err := decodeBody(ev.data)
		if err != nil {
			// Skipped, as the line connection skips a line that is not
			// JSON-RPC: one bad event need not cost the stream.
			c.log.Warn("undecodable message on stream", "error", err)
			continue
		}
		for _, m := range msgs {
			if !(first && n == 0 && c.handOn(m, call)) && !c.deliver(ctx, m, call) {
				return n, ctx.Err()
			}
			n++
			if r, ok := m.(*jsonrpc.Response); ok && call.IsValid() && r.ID == call && answered != nil {
				answered()
			}
		}
	}
}

// startListening opens the standalone stream once, after initialization:
// only then does the client know the session ID the GET must carry.
func (c *streamableConn) startListening() {
	c.mu.Lock()
	start := !c.listening && (c.proto == "" || c.proto < noStandaloneFrom)
	c.listening = true
	c.mu.Unlock()
	if start {
		c.goOwned(c.listen)
	}
}

// listen keeps the standalone GET stream open until Close. The stream is
// optional: a 405 or other 4xx means the server offers none. A stream that
// ends or breaks is reopened after a backoff (or the server's retry time),
// with Last-Event-ID when the server numbers its events; a 404 means the
// session is gone.
func (c *streamableConn) listen() {
	delay := listenBackoffMin
	var (
		lastID   string
		retry    time.Duration
		failures int // consecutive attempts that reached no server
	)
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !c.pause(delay) {
			return
		}
		next := min(2*delay, listenBackoffMax)
		req, sent, err := c.standaloneRequest(lastID)
		if err != nil {
			return // as the POSTs already failed
		}
		resp, err := c.client.Do(req)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			if failures++; failures >= listenMaxFailures {
				c.fail(fmt.Errorf("streamable http: standalone stream: %d attempts failed: %w", failures, err))
				return
			}
			delay = next
			continue
		}
		failures = 0
		switch c.checkStandalone(resp, sent) {
		case standaloneGone:
			return
		case standaloneRetry:
			delay = next
			continue
		}
		sr, n, ok := c.readStandalone(resp, attempt)
		if !ok {
			return
		}
		if sr.lastID != "" {
			lastID = sr.lastID
		}
		if sr.retry > 0 {
			retry = min(sr.retry, listenRetryMax) // the SSE reconnection time outlives the stream
		}
		delay = listenDelay(retry, n, next)
	}
}

// listenDelay is the wait before reopening a standalone stream that ended
// after delivering n messages: the server's retry time if it gave one, the
// shortest backoff after a stream that delivered something, else next.
func listenDelay(retry time.Duration, n int, next time.Duration) time.Duration {
	switch {
	case retry > 0:
		return retry
	case n > 0:
		return listenBackoffMin
	default:
		return next
	}
}

// pause waits for delay. It reports false if the connection closed or
// failed first.
func (c *streamableConn) pause(delay time.Duration) bool {
	t := time.NewTimer(delay)
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		t.Stop()
		return false
	case <-c.failed:
		t.Stop()
		return false
	}
}

// standaloneRequest returns the GET that opens the standalone stream,
// resuming after lastID if it is set, and whether it carries a session ID.
func (c *streamableConn) standaloneRequest(lastID string) (*http.Request, bool, error) {
	req, sent, err := c.newRequest(c.ctx, http.MethodGet, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set(headerLastEventID, lastID)
	}
	return req, sent, nil
}

// standaloneVerdict is what listen does with the answer to its GET.
type standaloneVerdict int

const (
	standaloneOpen  standaloneVerdict = iota // an event stream: read it
	standaloneRetry                          // a server error: try again later
	standaloneGone                           // no stream, or no session: stop
)

// checkStandalone judges the answer to the standalone GET, and closes its
// body unless it is a stream to read. A 404 to a request that carried a
// session ID fails the connection: the session is gone.
func (c *streamableConn) checkStandalone(resp *http.Response, sent bool) standaloneVerdict {
	switch {
	case resp.StatusCode == http.StatusNotFound && sent:
		closeBody(resp)
		c.fail(fmt.Errorf("streamable http: get: %s: %w", resp.Status, mcp.ErrSessionMissing))
		return standaloneGone
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		closeBody(resp)
		return standaloneGone
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		closeBody(resp)
		return standaloneRetry
	case mediaType(resp.Header.Get("Content-Type")) != "text/event-stream":
		closeBody(resp)
		return standaloneGone
	}
	return standaloneOpen
}

// readStandalone reads the standalone stream until it ends and closes it.
// It returns the stream's reader (for the last event ID and retry time) and
// how many messages it delivered; ok is false once the connection is closed.
func (c *streamableConn) readStandalone(resp *http.Response, attempt int) (sr *sseReader, n int, ok bool) {
	sr = newSSEReader(resp.Body, c.max)
	n, err := c.readEvents(c.ctx, sr, jsonrpc.ID{}, false, nil)
	resp.Body.Close()
	sr.release() // lastID and retry stay readable
	if c.ctx.Err() != nil {
		return sr, n, false
	}
	if errors.Is(err, errTooLarge) {
		c.log.Warn("standalone stream failed", "error", err)
	} else {
		c.log.Debug("standalone stream ended", "attempt", attempt, "error", err)
	}
	return sr, n, true
}

// streamPaused marks, in the messages a connection reads, that the server
// closed a call's stream before its answer, to be polled: the only message
// whose Extra is of this type, never one of the server's.
type streamPaused struct {
	call  jsonrpc.ID
	retry time.Duration
}

// Pauser is a Sink told that the server closed its call's stream to be
// polled (SEP-1699), so that it may close its own client's stream too.
type Pauser interface {
	Pause(retry time.Duration)
}
