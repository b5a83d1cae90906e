package upstream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is one connection to the server, from a successful connect to
// its close; sessionSlot holds the one calls go to.
type session struct {
	cl     *client
	proc   *stdioConn // nil for remote servers
	stderr *lineWriter

	lost         chan struct{} // closed when a call saw the connection break
	lostOnce     sync.Once
	lostErr      error       // why, set before lost is closed
	checking     atomic.Bool // a health check after a timeout runs (checkAfterTimeout)
	answered     atomic.Bool // the server answered a call on this session: the run was healthy
	unresponsive atomic.Bool // the health check got no answer: close kills at once
}

// markLost tells the supervisor that a call saw the connection break, and
// why. The read loop notices too, but closing a stdio connection waits for
// the child to exit after stdin EOF, which a child stuck writing to a pipe
// nobody reads never does; the supervisor's stop sequence does not wait.
// A remote connection may not notice at all (a stateless server has no
// stream open between calls).
func (s *session) markLost(err error) {
	s.lostOnce.Do(func() {
		s.lostErr = err
		close(s.lost)
	})
}

// lostForConsent reports whether a call lost the session because the
// server needs consent (needsConsent).
func (s *session) lostForConsent() bool {
	return s.isLost() && s.lostErr != nil && needsConsent(s.lostErr.Error())
}

// isLost reports whether markLost was called.
func (s *session) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

// errConnectionLost ends a session whose connection broke under a call.
var errConnectionLost = errors.New("connection lost during a call")

// lostGrace is how long serve waits, after a call saw the connection break,
// for the session's own end (whose error says more, such as the exit status).
const lostGrace = 250 * time.Millisecond

// close ends the session: the connection's close closes stdin and waits
// while escalate signals the process group; whatever is left of the group
// is then killed.
func (s *session) close() {
	if s.proc != nil && s.unresponsive.Load() {
		// It answers nothing, so it will not heed stdin's end or SIGTERM
		// either (a stopped process does not even get them): no grace.
		if pid := s.proc.pid(); pid != 0 {
			killGroup(pid)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if s.proc != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.proc.escalate(done)
		}()
	}
	if s.cl != nil {
		_ = s.cl.close()
	}
	close(done)
	wg.Wait()
	if s.proc != nil {
		s.proc.reapGroup()
	}
	s.stderr.Flush()
}

// sessionSlot holds the live session, and what a new session must be told
// again after a restart: the subscribed URIs and the logging level. The
// supervisor publishes and withdraws the session; calls load it, or wait
// for the next one (next).
type sessionSlot struct {
	log hclog.Logger
	cur atomic.Pointer[session]

	mu       sync.Mutex
	set      chan struct{} // closed at the next publish; nil while nobody waits
	subs     map[string]bool
	level    mcp.LoggingLevel
	restored mcp.LoggingLevel // the level restore set on the session being published
}

// load is the live session, or nil.
func (sl *sessionSlot) load() *session { return sl.cur.Load() }

// withdraw takes the live session away from calls.
func (sl *sessionSlot) withdraw() { sl.cur.Store(nil) }

// next returns a channel that is closed when a session is next published.
// Taken before a look at the session that found none usable, it cannot
// miss a publish that comes after the look.
func (sl *sessionSlot) next() <-chan struct{} {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.set == nil {
		sl.set = make(chan struct{})
	}
	return sl.set
}

// publish makes s the live session. A logging level set after restore read
// it, while s was not live yet, is applied to s now, within timeout.
func (sl *sessionSlot) publish(ctx context.Context, s *session, timeout time.Duration) {
	sl.mu.Lock()
	sl.cur.Store(s)
	if sl.set != nil {
		close(sl.set) // wakes the calls waiting for a session
		sl.set = nil
	}
	level, missed := sl.level, sl.level != sl.restored
	sl.mu.Unlock()
	if !missed || level == "" || s.cl.isModern() {
		return
	}
	if caps := serverCaps(s.cl); caps == nil || caps.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := s.cl.call(ctx, "logging/setLevel", &mcp.SetLoggingLevelParams{Level: level}, nil); err != nil {
		sl.log.Warn("upstream logging level not set", "error", err)
	}
}

// restore re-subscribes and re-sets the logging level on a fresh session.
// Failures are logged; the session is usable either way.
func (sl *sessionSlot) restore(ctx context.Context, cl *client) {
	sl.mu.Lock()
	level := sl.level
	sl.restored = level
	uris := make([]string, 0, len(sl.subs))
	for u := range sl.subs {
		uris = append(uris, u)
	}
	sl.mu.Unlock()
	if cl.isModern() {
		// Levels go with each request; subscriptions are listens.
		for _, u := range uris {
			if err := cl.watchResource(ctx, u); err != nil {
				sl.log.Warn("upstream subscription not restored", "error", err)
			}
		}
		return
	}
	caps := serverCaps(cl)
	if level != "" && caps != nil && caps.Logging != nil {
		if _, err := cl.call(ctx, "logging/setLevel", &mcp.SetLoggingLevelParams{Level: level}, nil); err != nil {
			sl.log.Warn("upstream logging level not restored", "error", err)
		}
	}
	for _, u := range uris {
		if _, err := cl.call(ctx, "resources/subscribe", &mcp.SubscribeParams{URI: u}, nil); err != nil {
			sl.log.Warn("upstream subscription not restored", "error", err)
		}
	}
}

// loggingLevel is the level last set ("": none).
func (sl *sessionSlot) loggingLevel() mcp.LoggingLevel {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.level
}

// setLevel keeps level for the sessions to come and returns the live
// session, if any, to set it on. Under mu, as publish stores the session:
// either the caller gets the new session, or publish sees the new level.
func (sl *sessionSlot) setLevel(level mcp.LoggingLevel) *session {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.level = level
	return sl.cur.Load()
}

// subscribe keeps uri for the sessions to come and returns the live
// session, if any.
func (sl *sessionSlot) subscribe(uri string) *session {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.subs == nil {
		sl.subs = map[string]bool{}
	}
	sl.subs[uri] = true
	return sl.cur.Load()
}

// unsubscribe drops uri for the sessions to come and returns the live
// session, if any.
func (sl *sessionSlot) unsubscribe(uri string) *session {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	delete(sl.subs, uri)
	return sl.cur.Load()
}
