package sse

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-switchboard/switchboard/proxy/internal/httpio"
	"github.com/mcp-switchboard/switchboard/proxy/internal/rebind"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

// MaxBodyBytes bounds a POST body, as the streamable HTTP endpoint does.
const MaxBodyBytes = 4 << 20

// writeTimeout bounds one write to a client: a client that stops reading
// its stream loses it instead of holding switchboard's goroutines.
const writeTimeout = 10 * time.Second

// Opener opens a session for the GET that starts it, with its ID and its
// stream (the principal the authentication middleware found is in the
// request's context).
type Opener func(r *http.Request, id string, out session.Stream) (*session.Session, error)

// Authorizer reports whether a POST may use a session: a session is bound
// to the principal that opened it.
type Authorizer func(s *session.Session, r *http.Request) bool

// Handler serves one legacy SSE endpoint. Its zero value is not usable;
// see New.
type Handler struct {
	open      Opener
	authorize Authorizer
	log       hclog.Logger

	mu       sync.Mutex
	sessions map[string]*conn

	bodyTimeout atomic.Int64 // ns a POST body may take to arrive; 0: no limit
}

// SetBodyTimeout bounds how long a POST's body may take to arrive (0: no
// bound); a client slower than that loses its connection.
func (h *Handler) SetBodyTimeout(d time.Duration) { h.bodyTimeout.Store(int64(max(d, 0))) }

// conn is one open session and its stream.
type conn struct {
	sess *session.Session
	out  *stream
}

// New returns a Handler that opens sessions with open and checks every
// POST with authorize.
func New(open Opener, authorize Authorizer, log hclog.Logger) *Handler {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Handler{open: open, authorize: authorize, log: log, sessions: map[string]*conn{}}
}

// Sessions counts the open sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Close ends every open session; their GETs then return.
func (h *Handler) Close() {
	h.mu.Lock()
	open := make([]*session.Session, 0, len(h.sessions))
	for _, c := range h.sessions {
		open = append(open, c.sess)
	}
	h.mu.Unlock()
	for _, s := range open {
		s.Close()
	}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rebind.Refused(w, r) {
		return
	}
	switch r.Method {
	case http.MethodGet:
		h.get(w, r)
	case http.MethodPost:
		h.post(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	if !httpio.IsJSON(r.Header.Get("Content-Type")) {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	id := r.URL.Query().Get("sessionid")
	if id == "" {
		http.Error(w, "sessionid must be provided", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	c := h.sessions[id]
	h.mu.Unlock()
	if c == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	sess := c.sess
	if h.authorize != nil && !h.authorize(sess, r) {
		http.Error(w, "session belongs to another principal", http.StatusForbidden)
		return
	}
	body, err := httpio.Read(w, r, MaxBodyBytes, time.Duration(h.bodyTimeout.Load()))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	msgs, batch, err := wire.Decode(body)
	if err != nil {
		http.Error(w, "failed to parse body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if batch {
		// 2024-11-05 has batches, but no client of this transport sends
		// them; one message per POST keeps each answer on the stream.
		http.Error(w, "JSON-RPC batches are not supported on this endpoint", http.StatusBadRequest)
		return
	}
	select {
	case <-sess.Done():
		http.Error(w, "session closed", http.StatusNotFound)
		return
	default:
	}
	w.WriteHeader(http.StatusAccepted)
	// The request keeps the values of the HTTP request (the principal),
	// not its end: the POST is over long before the answer.
	sess.Go(context.WithoutCancel(r.Context()), msgs[0], c.out)
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	id := rand.Text()
	endpoint, err := r.URL.Parse("?sessionid=" + id)
	if err != nil {
		http.Error(w, "internal error: failed to create endpoint", http.StatusInternalServerError)
		return
	}
	// The stream takes writes once its headers and endpoint are out.
	st := &stream{}
	st.hold.Use(w)
	sess, err := h.open(r, id, st)
	if errors.Is(err, session.ErrSessionLimit) {
		h.log.Warn("downstream session refused", "error", err)
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	}
	if err != nil {
		h.log.Error("downstream session refused", "error", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	defer sess.Close()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	st.mu.Lock()
	st.w = w
	st.mu.Unlock()
	// The session is found before its endpoint goes out: a client may POST
	// as soon as it has read it.
	h.mu.Lock()
	h.sessions[id] = &conn{sess, st}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.sessions, id)
		h.mu.Unlock()
	}()
	if err := st.event("endpoint", []byte(endpoint.RequestURI())); err != nil {
		return
	}
	select {
	case <-r.Context().Done():
	case <-sess.Done():
	case <-st.broken():
	}
	st.release()
}

// stream is a session's one event stream. It is a session.Stream.
type stream struct {
	mu     sync.Mutex
	w      http.ResponseWriter // nil once the GET is over or a write failed
	hold   httpio.Hold
	failed chan struct{} // closed when a write failed
	once   sync.Once
}

var _ session.Stream = (*stream)(nil)

// Write sends one message event, flushed, within writeTimeout.
func (s *stream) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := wire.Encode(msg)
	if err != nil {
		return err
	}
	return s.event("message", data)
}

func (s *stream) event(name string, data []byte) error {
	buf := make([]byte, 0, len("event: \ndata: \n\n")+len(name)+len(data))
	buf = append(append(append(buf, "event: "...), name...), "\ndata: "...)
	buf = append(append(buf, data...), "\n\n"...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return fmt.Errorf("%w: stream closed", session.ErrNoStream)
	}
	if err := s.hold.WriteFlush(s.w, buf, writeTimeout); err != nil {
		s.w = nil
		s.once.Do(func() { close(s.brokenCh()) })
		return fmt.Errorf("stream write: %w", err)
	}
	return nil
}

// broken is closed once a write failed: the GET ends, and the session
// with it.
func (s *stream) broken() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.brokenCh()
}

// brokenCh is the broken channel; s.mu held.
func (s *stream) brokenCh() chan struct{} {
	if s.failed == nil {
		s.failed = make(chan struct{})
	}
	return s.failed
}

// release ends the stream's hold on the response writer. A write blocked
// on a client that does not read gives up at once instead of at its
// deadline.
func (s *stream) release() { s.hold.Release(&s.mu, func() { s.w = nil }) }
