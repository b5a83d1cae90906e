package streamhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// A standalone GET stream may stay open, silent, for the whole life of its
// session. Held by net/http, each costs the connection's goroutine, a
// goroutine reading in the background, and 10 KiB of buffers (a 4 KiB
// reader, a 4 KiB writer, the response's 2 KiB): with 1000 idle sessions,
// most of the memory. Over HTTP/1 the stream takes its connection over
// from net/http instead (Hijack): the same head and chunked events on the
// wire, written straight to the connection, and one goroutine with a small
// stack that reads only to see the client leave. Where the connection
// cannot be taken (HTTP/2), net/http holds the stream as before (get).

// rawStream is a standalone GET stream on a connection taken from
// net/http. It is a session.Stream.
type rawStream struct {
	c  *conn
	nc net.Conn

	mu     sync.Mutex // one write at a time; broken
	broken bool       // a write failed: the body may have stopped mid-chunk
	ended  atomic.Bool
	once   sync.Once
}

var _ session.Stream = (*rawStream)(nil)

// takeOver takes r's connection from net/http for c's standalone stream,
// and returns the stream and what to write first; nil, having written
// nothing, where the connection cannot be taken.
func (c *conn) takeOver(w http.ResponseWriter, r *http.Request) (*rawStream, []byte) {
	if r.ProtoMajor != 1 || !r.ProtoAtLeast(1, 1) {
		return nil, nil // HTTP/2 multiplexes; HTTP/1.0 has no chunked bodies
	}
	if !c.h.admit() {
		return nil, nil // closing: net/http holds it until the session ends
	}
	sseHeaders(w.Header())
	head := rawHead(w.Header())
	nc, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		c.h.wg.Done()
		return nil, nil
	}
	// Whatever net/http set for the request, the stream has its own.
	_ = nc.SetDeadline(time.Time{})
	return &rawStream{c: c, nc: nc}, head
}

// serve writes the stream's head and watches for the client to leave, on
// a goroutine of its own that the Handler's Close waits for (takeOver
// admitted it); rs.mu held, and released.
func (rs *rawStream) serve(head []byte) {
	err := rs.writeLocked(head)
	rs.mu.Unlock()
	if err != nil {
		rs.end(false)
		rs.c.h.wg.Done()
		return
	}
	go rs.watch()
}

// rawHead is the response's head with h's headers and, so that the stream
// goes out at once (proxies hold back headers without a body), its first
// chunk: an SSE comment. The body is chunked, as net/http sends it; the
// connection closes with the stream.
func rawHead(h http.Header) []byte {
	h = h.Clone()
	h.Set("Connection", "close")
	h.Set("Transfer-Encoding", "chunked")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&b)
	b.WriteString("\r\n")
	return appendChunk(b.Bytes(), []byte(": ok\n\n"))
}

// appendChunk appends data to b as one HTTP/1.1 chunk.
func appendChunk(b, data []byte) []byte {
	b = strconv.AppendInt(b, int64(len(data)), 16)
	b = append(b, "\r\n"...)
	b = append(b, data...)
	return append(b, "\r\n"...)
}

// lastChunk ends a chunked body.
const lastChunk = "0\r\n\r\n"

// watch reads until the client leaves (or the stream ends), then ends the
// stream. A client sends nothing on a GET stream.
func (rs *rawStream) watch() {
	defer rs.c.h.wg.Done()
	var b [64]byte
	for {
		if _, err := rs.nc.Read(b[:]); err != nil {
			break
		}
	}
	rs.end(false)
}

// Write implements session.Stream: one SSE event, one chunk, one write
// within writeTimeout. A failed write ends the stream: the client sees it
// close and may open another.
func (rs *rawStream) Write(_ context.Context, msg jsonrpc.Message) error {
	event, err := encodeEvent(msg, "")
	if err != nil {
		return err
	}
	rs.mu.Lock()
	if rs.ended.Load() {
		rs.mu.Unlock()
		return fmt.Errorf("%w: stream closed", session.ErrNoStream)
	}
	err = rs.writeLocked(appendChunk(make([]byte, 0, len(event)+16), event))
	rs.mu.Unlock()
	if err != nil {
		rs.end(false)
		return fmt.Errorf("stream write: %w", err)
	}
	return nil
}

// writeLocked writes b within writeTimeout, or at once once the stream
// is ending; rs.mu held.
func (rs *rawStream) writeLocked(b []byte) error {
	_ = rs.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if rs.ended.Load() {
		_ = rs.nc.SetWriteDeadline(time.Now())
	}
	_, err := rs.nc.Write(b)
	if err != nil {
		rs.broken = true
	}
	return err
}

// endTimeout bounds the last chunk's write when the session ends: a
// session's close, and so a shutdown, must not wait on a client that does
// not read.
const endTimeout = 100 * time.Millisecond

// end ends the stream once: a write stuck on a client that does not read
// cut short, the body's end written (polite: the session ended it) after
// the write in progress, if none failed, then the connection closed and c
// without the stream.
func (rs *rawStream) end(polite bool) {
	rs.once.Do(func() {
		rs.ended.Store(true)
		_ = rs.nc.SetWriteDeadline(time.Now())
		rs.mu.Lock()
		if polite && !rs.broken {
			_ = rs.nc.SetWriteDeadline(time.Now().Add(endTimeout))
			_, _ = rs.nc.Write([]byte(lastChunk))
		}
		rs.mu.Unlock()
		if err := rs.nc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			rs.c.h.log.Debug("standalone stream close", "error", err)
		}
		c := rs.c
		c.mu.Lock()
		if c.standalone == rs {
			c.standalone = nil
		}
		c.mu.Unlock()
		c.leave()
	})
}

// endStandalone ends c's standalone stream, if it holds its connection
// itself: its session ended. (One net/http holds ends with its handler.)
func (c *conn) endStandalone() {
	c.mu.Lock()
	rs, _ := c.standalone.(*rawStream)
	c.mu.Unlock()
	if rs != nil {
		rs.end(true)
	}
}
