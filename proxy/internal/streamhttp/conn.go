package streamhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/direct"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// conn is one session's connection: what its ServerSession reads and
// writes. Incoming messages come from POSTs; each write goes to the stream
// of the call it answers or belongs to, else to the standalone GET stream.
type conn struct {
	h        *Handler
	id       string
	userID   string // the token that opened the session, if any
	session  *mcp.ServerSession
	incoming chan jsonrpc.Message
	done     chan struct{}
	once     sync.Once
	direct   *direct.Runner // nil: every call goes to the server
	cancel   context.CancelFunc

	mu         sync.Mutex
	calls      map[jsonrpc.ID]*call
	related    map[*mcp.RequestExtra]*call
	standalone *stream
}

// call is a request in flight and the stream its answer goes to.
type call struct {
	extra *mcp.RequestExtra
	s     *stream
}

// stream is one hanging response: a POST's SSE stream or the GET stream.
type stream struct {
	mu   sync.Mutex
	w    http.ResponseWriter // nil once its request is over
	rc   *http.ResponseController
	left int           // a POST stream's unanswered calls
	done chan struct{} // a POST stream: closed with the last answer
}

// transport hands the connection to Server.Connect.
type transport struct{ c *conn }

var (
	_ mcp.Transport                = transport{}
	_ mcp.ProtocolVersionSupporter = transport{}
	_ mcp.Connection               = (*conn)(nil)
)

func (t transport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// SupportsProtocolVersion: a stateful server serves the versions before
// 2026-07-28 (server/discover lists only those).
func (transport) SupportsProtocolVersion(v string) bool { return slices.Contains(legacy, v) }

// serve delivers one checked POST body to the session and, when it holds
// calls, streams their answers back.
func (c *conn) serve(w http.ResponseWriter, r *http.Request, in incoming) {
	if len(in.calls) == 0 {
		for _, m := range in.msgs {
			if req, ok := m.(*jsonrpc.Request); ok {
				c.direct.Cancelled(req)
			}
			select {
			case c.incoming <- m:
			case <-c.done:
				http.Error(w, "session is closing", http.StatusNotFound)
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}

	s := &stream{w: w, rc: http.NewResponseController(w), left: len(in.calls), done: make(chan struct{})}
	c.mu.Lock()
	var seen map[jsonrpc.ID]bool // a batch's own IDs
	if len(in.calls) > 1 {
		seen = make(map[jsonrpc.ID]bool, len(in.calls))
	}
	for _, req := range in.calls {
		if _, busy := c.calls[req.ID]; busy || seen[req.ID] {
			c.mu.Unlock()
			writeError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{
				Code:    jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("duplicate in-flight request ID %v", req.ID.Raw()),
			})
			return
		}
		if seen != nil {
			seen[req.ID] = true
		}
	}
	for _, req := range in.calls {
		cl := &call{extra: req.Extra.(*mcp.RequestExtra), s: s}
		c.calls[req.ID] = cl
		c.related[cl.extra] = cl
	}
	c.mu.Unlock()

	hdr := w.Header()
	sseHeaders(hdr)
	if in.init {
		hdr.Set(sessionIDHeader, c.id)
	}
	// Messages go to the server in order, but direct calls; a lone direct
	// call runs on this goroutine, others on their own as the server would.
	var inline *direct.Call
	for i, m := range in.msgs {
		if req, ok := m.(*jsonrpc.Request); ok {
			c.direct.Cancelled(req)
			if dc := c.direct.Take(c.session, req, req.Extra.(*mcp.RequestExtra)); dc != nil {
				if i == len(in.msgs)-1 && len(in.calls) == 1 {
					inline = dc
				} else {
					go c.direct.Run(dc, c.answer)
				}
				continue
			}
		}
		select {
		case c.incoming <- m:
		case <-c.done:
			s.release()
			return
		}
	}
	if inline != nil {
		c.direct.Run(inline, c.answer)
	}
	select {
	case <-r.Context().Done():
	case <-s.done:
	case <-c.done:
	}
	s.release()
}

// answer writes a direct call's answer.
func (c *conn) answer(ctx context.Context, r *jsonrpc.Response) { _ = c.Write(ctx, r) }

// release ends the stream's hold on its response writer.
func (s *stream) release() {
	s.mu.Lock()
	s.w = nil
	s.mu.Unlock()
}

// deliver writes one SSE event; answer counts it against the stream's
// calls, and the last answer ends a POST stream.
func (s *stream) deliver(event []byte, answer bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if answer {
		s.left--
	}
	if s.w == nil {
		return fmt.Errorf("%w: stream closed", errRejected)
	}
	last := answer && s.left == 0
	_, err := s.w.Write(event)
	// Flushed even when it is the last: a shutdown that waits for POST
	// handlers closes the connections once they return, which can be
	// before net/http wrote what the handler left buffered.
	if err == nil {
		err = s.rc.Flush()
	}
	if last {
		s.w = nil
		close(s.done)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errRejected, err)
	}
	return nil
}

// Read implements mcp.Connection.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m := <-c.incoming:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection. A message that has nowhere to go is
// rejected without breaking the session, as in the SDK's transport.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var (
		s      *stream
		answer bool
	)
	c.mu.Lock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if cl := c.calls[m.ID]; cl != nil {
			delete(c.calls, m.ID)
			delete(c.related, cl.extra)
			s, answer = cl.s, true
		}
	default:
		if ex, ok := ctx.Value(relatedKey{}).(*mcp.RequestExtra); ok {
			// About a call: on its stream while it is open, nowhere after.
			if cl := c.related[ex]; cl != nil {
				s = cl.s
			}
		} else {
			s = c.standalone
		}
	}
	select {
	case <-c.done:
		c.mu.Unlock()
		return errors.New("session is closed")
	default:
	}
	c.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: no open stream for the message", errRejected)
	}
	event, err := encodeEvent(msg)
	if err != nil {
		return err
	}
	return s.deliver(event, answer)
}

// encodeEvent is msg as one SSE message event.
func encodeEvent(msg jsonrpc.Message) ([]byte, error) {
	const head, tail = "event: message\ndata: ", "\n\n"
	if r, ok := msg.(*jsonrpc.Response); ok {
		// 48: the envelope around the result, with an ID of up to 20 bytes.
		buf := append(make([]byte, 0, len(head)+48+len(r.Result)+len(tail)), head...)
		if event := upstream.AppendResponse(buf, r); event != nil {
			return append(event, tail...), nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	event := make([]byte, 0, len(head)+len(data)+len(tail))
	event = append(event, head...)
	event = append(event, data...)
	return append(event, tail...), nil
}

// Close implements mcp.Connection: it ends every stream of the session,
// cancels its direct calls and forgets it. It is idempotent and safe to
// call concurrently.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.cancel()
		c.mu.Lock()
		close(c.done)
		c.mu.Unlock()
		c.h.mu.Lock()
		delete(c.h.sessions, c.id)
		c.h.mu.Unlock()
	})
	return nil
}

// SessionID implements mcp.Connection.
func (c *conn) SessionID() string { return c.id }
