package upstream

import (
	"sync"
	"time"
)

// gate counts the calls in flight. Close shuts it and waits for the count
// to drain to zero, and a lazy server's idle stop happens only while it is
// zero. The count, the closing flag and the idle stop's decision change
// under one mutex: the call that leaves a closing gate empty is the one
// that closes drained, so Close cannot miss it, and a call either enters
// before an idle stop (which then does not happen) or finds the session
// withdrawn once it entered.
type gate struct {
	mu      sync.Mutex
	n       int64         // calls in flight
	last    time.Time     // when the count last fell to zero, or the session's start; read only at zero
	closing bool          // calls are refused
	drained chan struct{} // made by close; closed once closing and n is zero
}

// enter counts a call in; it reports false, counting nothing, once the
// gate is closing.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.n++ // last is not read while a call is in flight
	return true
}

// leave counts a call out.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n > 0 {
		return
	}
	g.last = time.Now()
	if g.closing {
		close(g.drained)
	}
}

// close refuses calls from now on and returns a channel that is closed
// once none is in flight. It may be called more than once.
func (g *gate) close() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closing {
		g.closing = true
		g.drained = make(chan struct{})
		if g.n == 0 {
			close(g.drained)
		}
	}
	return g.drained
}

// closed reports whether calls are refused.
func (g *gate) closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closing
}

// inFlight is the number of calls in flight.
func (g *gate) inFlight() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// touch starts the idle clock over, as a new session does.
func (g *gate) touch() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last = time.Now()
}

// idleIn is how long until the gate will have been unused for d: d less
// the time since the last use, or all of d while a call is in flight.
func (g *gate) idleIn(d time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n > 0 {
		return d
	}
	return d - time.Since(g.last)
}

// stopIfIdle runs withdraw and reports true if no call is in flight and
// none started or ended for d. A call that enters after it finds what
// withdraw did.
func (g *gate) stopIfIdle(d time.Duration, withdraw func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n > 0 || time.Since(g.last) < d {
		return false
	}
	withdraw()
	return true
}
