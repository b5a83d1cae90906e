package streamhttp

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// Sessions that outlive their process: a session's ID is minted from its
// initialize (Continuity.Mint), and a request naming a session this
// process does not hold opens it again from the ID (Continuity.Resume),
// unless it ended here (DELETE, idle expiry, a client too slow for its
// stream): the spec has an ended session's ID answered 404. A session ID
// lasts at most its max age (SetMaxAge) from its issue, wherever it is
// held; then the session ends, and its ID is 404.

// Continuity is how sessions outlive the process that opened them (see
// SetContinuity).
type Continuity struct {
	// Mint names a new session from the initialize request that opens it.
	Mint func(r *http.Request, init *jsonrpc.Request) string
	// Resume opens the session an ID names that this process does not
	// hold, as its client initialized it elsewhere. It fails with an error
	// wrapping ErrNoSession or ErrNotYours (both answered 404: a session
	// that is not the caller's is as unknown to it as one that never
	// was), or session.ErrSessionLimit (429).
	Resume func(r *http.Request, id string) (*session.Session, error)
	// Issued is when the ID of a session this process holds (minted here
	// or resumed) was first issued; zero: now. Nil: when it was opened
	// here.
	Issued func(id string) time.Time
}

// Errors of Continuity.Resume.
var (
	ErrNoSession = errors.New("session not found")
	ErrNotYours  = errors.New("session belongs to another principal")
)

// SetContinuity sets how sessions are named and resumed (by default: a
// random name, and an ID this process does not hold is 404). Call it
// before serving.
func (h *Handler) SetContinuity(c Continuity) { h.cont = c }

// Resumed counts the sessions resumed from their IDs.
func (h *Handler) Resumed() int64 { return h.resumed.Load() }

// resume opens the session id names with Continuity.Resume, and holds it
// from now on; it writes the error response when it cannot.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, id string) *conn {
	sess, err := h.cont.Resume(r, id)
	switch {
	case err == nil:
	case errors.Is(err, ErrNoSession), errors.Is(err, ErrNotYours):
		h.log.Debug("downstream session not resumed", "error", err)
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	case errors.Is(err, session.ErrSessionLimit):
		h.log.Warn("downstream session not resumed", "error", err)
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return nil
	default:
		h.log.Error("downstream session not resumed", "error", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return nil
	}
	c := h.register(&conn{h: h, id: id, sess: sess})
	if c.sess != sess {
		sess.Close() // another request resumed it first
		return c
	}
	h.resumed.Add(1)
	h.log.Info("downstream session resumed", "session_id", id, "version", sess.ProtocolVersion())
	return c
}

// SetMaxAge makes a session end once its ID was issued longer than d ago
// (0: never), wherever it is held: a request naming it then gets 404, and
// the client initializes anew. It may change at any time.
func (h *Handler) SetMaxAge(d time.Duration) { h.maxAge.Store(int64(max(d, 0))) }

// setBorn notes when c's ID was issued.
func (h *Handler) setBorn(c *conn) {
	var at time.Time
	if h.cont.Issued != nil {
		at = h.cont.Issued(c.id)
	}
	if at.IsZero() {
		at = time.Now()
	}
	c.born = at.UnixNano()
}

// tooOld reports whether c's ID is past the max age at now (unix ns).
func (h *Handler) tooOld(c *conn, now int64) bool {
	age := h.maxAge.Load()
	return age > 0 && now-c.born > age
}

// maxEnded bounds the ended sessions a Handler remembers; past it, the
// oldest is forgotten.
const maxEnded = 1 << 16

// endedIDs are the IDs of sessions that ended here, which must stay ended
// (404) rather than be resumed: a digest of each, the oldest forgotten
// first.
type endedIDs struct {
	mu    sync.Mutex
	set   map[[16]byte]struct{}
	order [][16]byte // in the order added; a ring once full, oldest at next
	next  int
}

func endedKey(id string) [16]byte {
	sum := sha256.Sum256([]byte(id))
	return [16]byte(sum[:16])
}

func (e *endedIDs) add(id string) {
	k := endedKey(id)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.set == nil {
		e.set = map[[16]byte]struct{}{}
	}
	if _, ok := e.set[k]; ok {
		return
	}
	if len(e.order) < maxEnded {
		e.order = append(e.order, k)
	} else {
		delete(e.set, e.order[e.next])
		e.order[e.next] = k
		e.next = (e.next + 1) % maxEnded
	}
	e.set[k] = struct{}{}
}

func (e *endedIDs) has(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.set[endedKey(id)]
	return ok
}
