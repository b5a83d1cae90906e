package streamhttp

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/httpio"
	"github.com/mcp-switchboard/switchboard/proxy/internal/rebind"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

// Header names and protocol versions this transport acts on.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
	methodHeader          = "Mcp-Method"
	nameHeader            = "Mcp-Name"

	v20250326 = "2025-03-26"
	v20250618 = "2025-06-18"
	v20260728 = "2026-07-28"

	methodInitialize = "initialize"
	methodDiscover   = "server/discover"
)

// MaxBodyBytes bounds a POST body, as the SDK's DefaultMaxRequestBodyBytes.
const MaxBodyBytes = 4 << 20

// Opener opens a session for the request that starts it (the principal
// the authentication middleware found is in the request's context).
type Opener func(r *http.Request, id string) (*session.Session, error)

// Authorizer reports whether a request may use a session: a session is
// bound to the principal that opened it.
type Authorizer func(s *session.Session, r *http.Request) bool

// Handler serves one MCP endpoint. Its zero value is not usable; see New.
type Handler struct {
	opener    Opener
	authorize Authorizer
	log       hclog.Logger
	cont      Continuity
	resumed   atomic.Int64 // sessions Continuity.Resume opened
	ended     endedIDs     // sessions their clients ended, never resumed
	epoch     string       // names this Handler in its streams' IDs (resume.go)

	mu       sync.Mutex
	sessions map[string]*conn
	wg       sync.WaitGroup

	idle        atomic.Int64  // idle timeout in ns; 0: sessions never expire
	maxAge      atomic.Int64  // how long a session ID lasts from its issue, in ns; 0: for ever
	bodyTimeout atomic.Int64  // ns a POST body may take to arrive; 0: no limit
	sweeper     sync.Once     // starts the idle sweep with the first session
	stop        chan struct{} // closed by Close: ends the sweep
	closing     sync.Once
}

// New returns a Handler that opens sessions with open and checks every
// later request of a session with authorize.
func New(open Opener, authorize Authorizer, log hclog.Logger) *Handler {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Handler{opener: open, authorize: authorize, log: log, sessions: map[string]*conn{}, stop: make(chan struct{}), epoch: newEpoch()}
}

// SetBodyTimeout bounds how long a POST's body may take to arrive (0: no
// bound); a client slower than that loses its connection.
func (h *Handler) SetBodyTimeout(d time.Duration) { h.bodyTimeout.Store(int64(max(d, 0))) }

// SetIdleTimeout makes a session that had no request and no open stream
// for d end, as if its client had sent DELETE (0: never). It may change at
// any time; it applies from the next sweep.
func (h *Handler) SetIdleTimeout(d time.Duration) { h.idle.Store(int64(max(d, 0))) }

// admit counts one more goroutine for Close to wait for, unless Close
// began: a goroutine started once Close may be waiting would be missed.
func (h *Handler) admit() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.stop:
		return false
	default:
		h.wg.Add(1)
		return true
	}
}

// Close ends every open session and waits for their bookkeeping and the
// goroutines of their standalone streams; safe to call again and
// concurrently.
func (h *Handler) Close() {
	h.closing.Do(func() { close(h.stop) })
	h.mu.Lock()
	open := make([]*conn, 0, len(h.sessions))
	for _, c := range h.sessions {
		open = append(open, c)
	}
	h.mu.Unlock()
	for _, c := range open {
		c.sess.Close()
	}
	h.wg.Wait()
}

// massExpiry is how many sessions one sweep must end for it to return
// their memory to the operating system at once.
const massExpiry = 256

// sweep ends the sessions idle for longer than the idle timeout, and
// those past the max age (lookup refuses them at once; the sweep frees
// what they hold), until Close. It looks every tenth of the idle timeout
// (at least every 100 ms, at most every 30 s).
func (h *Handler) sweep() {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		idle := time.Duration(h.idle.Load())
		t.Reset(min(max(idle/10, 100*time.Millisecond), 30*time.Second))
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		idle, age := time.Duration(h.idle.Load()), time.Duration(h.maxAge.Load())
		if idle == 0 && age == 0 {
			continue
		}
		now := time.Now()
		cutoff := now.Add(-idle).UnixNano()
		var expired []*conn
		var reasons []string
		h.mu.Lock()
		for _, c := range h.sessions {
			switch {
			case idle > 0 && c.idleSince(cutoff):
				expired, reasons = append(expired, c), append(reasons, "idle for "+idle.String())
			case h.tooOld(c, now.UnixNano()):
				expired, reasons = append(expired, c), append(reasons, "older than sessionMaxAge "+age.String())
			}
		}
		h.mu.Unlock()
		for i, c := range expired {
			h.log.Info("downstream session expired", "session_id", c.id, "reason", reasons[i])
			c.sess.Close()
		}
		// Forgotten now, not when their AfterClose runs: what they held
		// is garbage before the collection below.
		h.mu.Lock()
		for _, c := range expired {
			if h.sessions[c.id] == c {
				delete(h.sessions, c.id)
			}
		}
		if len(expired) >= massExpiry {
			// A map never shrinks: its table sized for the sessions
			// just ended would stay, and pin the pages around it.
			h.sessions = maps.Clone(h.sessions)
		}
		h.mu.Unlock()
		if len(expired) >= massExpiry {
			// The heap they held would stay resident until the next
			// collection and the scavenger's slow return: give it back
			// now. A mass expiry is rare; the cost is one full collection.
			debug.FreeOSMemory()
		}
	}
}

// Sessions counts the open sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rebind.Refused(w, r) {
		return
	}
	if v := r.Header.Get(protocolVersionHeader); v != "" && v < v20260728 && !slices.Contains(supported, v) {
		http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(legacy, ",")), http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// lookup finds the request's session; it writes the error response when
// there is none. A session of another caller is one there is none of
// (404), and so is one past its max age, which ends.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request, id string) *conn {
	h.mu.Lock()
	c := h.sessions[id]
	h.mu.Unlock()
	if c == nil && h.cont.Resume != nil && !h.ended.has(id) {
		return h.resume(w, r, id)
	}
	if c == nil || h.authorize != nil && !h.authorize(c.sess, r) {
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	if h.tooOld(c, time.Now().UnixNano()) {
		h.log.Info("downstream session expired", "session_id", c.id, "reason", "older than sessionMaxAge "+time.Duration(h.maxAge.Load()).String())
		c.sess.Close()
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	return c
}

// session is the session a GET or DELETE names; it writes the error
// response when there is none.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) *conn {
	id := r.Header.Get(sessionIDHeader)
	if id == "" && r.Header.Get(protocolVersionHeader) >= v20260728 {
		// SEP-2575: without a session there is no stream to open or end.
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed: protocol "+v20260728+" has no sessions", http.StatusMethodNotAllowed)
		return nil
	}
	if id == "" {
		http.Error(w, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header", http.StatusBadRequest)
		return nil
	}
	return h.lookup(w, r, id)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	c := h.session(w, r)
	if c == nil {
		return
	}
	c.sess.Close()
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	if _, streamOK := accepts(r.Header.Values("Accept")); !streamOK {
		http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
		return
	}
	last := r.Header.Get(lastEventIDHeader)
	if last != "" && r.Header.Get(sessionIDHeader) != "" && h.foreign(w, r, last) {
		return
	}
	c := h.session(w, r)
	if c == nil {
		return
	}
	if last != "" {
		c.resume(w, r, last)
		return
	}
	c.get(w, r)
}

// incoming is one decoded POST body, checked.
type incoming struct {
	msgs  []jsonrpc.Message
	calls []*jsonrpc.Request
	init  bool // holds an initialize: the answer carries the session ID
	batch bool // the body is a JSON array: its answers go as events
	// modern: a request of protocol 2026-07-28, which needs no session
	modern bool
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	if !httpio.IsJSON(r.Header.Get("Content-Type")) {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
		return
	}
	if len(r.Header.Values(lastEventIDHeader)) > 0 {
		http.Error(w, "can't send Last-Event-ID for POST request", http.StatusBadRequest)
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
	if len(bytes.TrimSpace(body)) == 0 {
		http.Error(w, "POST requires a non-empty body", http.StatusBadRequest)
		return
	}
	in, ok := check(w, r, body)
	if !ok {
		return
	}

	if in.modern {
		h.stateless(w, r, in)
		return
	}
	var c *conn
	fresh := false
	if id := r.Header.Get(sessionIDHeader); id != "" {
		if c = h.lookup(w, r, id); c == nil {
			return
		}
	} else {
		if c = h.open(w, r, in); c == nil {
			return
		}
		fresh = true
	}
	c.serve(w, r, in)
	// A session whose first POST did not initialize it is of no use to
	// anyone: nobody learnt its ID.
	if fresh && !c.sess.Initialized() {
		c.sess.Close()
	}
}

// stateless serves a 2026-07-28 request: a session of its own, for the
// request only (whatever Mcp-Session-Id says: that protocol has none).
// Its context is the POST's: a client that closes the stream cancels it.
func (h *Handler) stateless(w http.ResponseWriter, r *http.Request, in incoming) {
	sess, err := h.opener(r, "")
	if err != nil {
		h.log.Error("stateless request refused", "error", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	defer sess.Close()
	c := &conn{h: h, sess: sess}
	c.serve(w, r, in)
}

// check decodes and vets a POST body; on refusal it has written the
// response.
func check(w http.ResponseWriter, r *http.Request, body []byte) (incoming, bool) {
	msgs, batch, err := wire.Decode(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "malformed payload: " + err.Error()})
		return incoming{}, false
	}
	header := r.Header.Get(protocolVersionHeader)
	version := header
	if version == "" {
		version = v20250326
	}
	if batch && version >= v20250618 {
		http.Error(w, fmt.Sprintf("JSON-RPC batching is not supported in %s and later (request version: %s)", v20250618, version), http.StatusBadRequest)
		return incoming{}, false
	}
	in := incoming{msgs: msgs, batch: batch}
	var lone peeked // the params of a lone request, read once for both checks
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		if req.Method == methodInitialize {
			in.init = true
		}
		pk := &lone
		if len(msgs) > 1 {
			pk = &peeked{}
		}
		pk.params = req.Params
		modern, ok := checkNewProtocol(w, req, pk, header, version)
		if !ok {
			return incoming{}, false
		}
		in.modern = in.modern || modern
		req.Extra = &session.Extra{Header: r.Header, Peek: pk.peek()}
		if req.IsCall() {
			in.calls = append(in.calls, req)
		}
	}
	// SEP-2575 headers: Mcp-Method must name a lone message's method.
	if header >= v20260728 && len(msgs) == 1 {
		if req, ok := msgs[0].(*jsonrpc.Request); ok {
			if got := r.Header.Get(methodHeader); got != req.Method {
				msg := "missing required Mcp-Method header"
				if got != "" {
					msg = fmt.Sprintf("header mismatch: Mcp-Method header value '%s' does not match body value '%s'", got, req.Method)
				}
				writeError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: msg})
				return incoming{}, false
			}
			if msg := checkName(r.Header, req, &lone); msg != "" {
				writeError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: msg})
				return incoming{}, false
			}
		}
	}
	if in.modern && len(msgs) != 1 {
		http.Error(w, fmt.Sprintf("protocol %s sends one message per POST", v20260728), http.StatusBadRequest)
		return incoming{}, false
	}
	if len(msgs) == 1 {
		if req, ok := msgs[0].(*jsonrpc.Request); ok {
			req.Extra.(*session.Extra).Peek = lone.peek() // checkName may have read it since
		}
	}
	return in, true
}

// supported are the SDK's protocol versions; legacy those a stateful server
// negotiates, before 2026-07-28.
var (
	supported = mcp.SupportedProtocolVersions()
	legacy    = slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= v20260728 })
)

// open starts a session for the request, named by Continuity.Mint when
// it initializes.
func (h *Handler) open(w http.ResponseWriter, r *http.Request, in incoming) *conn {
	c := &conn{h: h, id: rand.Text()}
	if h.cont.Mint != nil {
		for _, m := range in.msgs {
			if req, ok := m.(*jsonrpc.Request); ok && req.Method == methodInitialize {
				c.id = h.cont.Mint(r, req)
				break
			}
		}
	}
	sess, err := h.opener(r, c.id)
	if errors.Is(err, session.ErrSessionLimit) {
		h.log.Warn("downstream session refused", "error", err)
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return nil
	}
	if err != nil {
		h.log.Error("downstream session refused", "error", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return nil
	}
	c.sess = sess
	return h.register(c)
}

// register holds c's session under its ID from now on, until it closes;
// if a session is held under that ID already, that one's conn is returned
// and c is not held.
func (h *Handler) register(c *conn) *conn {
	c.touch()
	h.setBorn(c)
	// What has no request stream goes to the standalone GET stream.
	c.sess.SetStream(c)
	h.mu.Lock()
	if held := h.sessions[c.id]; held != nil {
		h.mu.Unlock()
		return held
	}
	h.sessions[c.id] = c
	h.mu.Unlock()
	h.sweeper.Do(func() { h.wg.Go(h.sweep) })
	// Forgotten once it ends, however it ends, and not resumed here: an
	// ended session's ID is 404 from now on.
	c.sess.AfterClose(func() {
		h.ended.add(c.id)
		h.mu.Lock()
		if h.sessions[c.id] == c {
			delete(h.sessions, c.id)
		}
		h.mu.Unlock()
		c.endStandalone()
	})
	return c
}

// accepts reports whether Accept admits JSON and an event stream.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

func sseHeaders(h http.Header) {
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
}

// writeError answers the whole POST with one JSON-RPC error.
// An invalid ID (the request's could not be read) is written as null, as
// JSON-RPC 2.0 prescribes.
func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	if err != nil {
		http.Error(w, e.Message, status)
		return
	}
	if !id.IsValid() {
		// The SDK's encoder leaves an invalid ID out.
		data = append([]byte(`{"jsonrpc":"2.0","id":null,`), data[len(`{"jsonrpc":"2.0",`):]...)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
