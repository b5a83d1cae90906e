package upstream

import (
	"errors"
	"sync/atomic"
	"time"
)

// A lazy server with an idle timeout (Spec.IdleTimeout) is stopped once no
// request went to it for that long and none is in flight, and goes back to
// idle; its catalog stays listed, and the next call starts it again (live,
// ensureStarted). The clock starts when the session is up and restarts at
// the beginning and at the end of every request.

// errIdle ends the session of a lazy server that was not used for its idle
// timeout.
var errIdle = errors.New("idle timeout")

// idleTimeout is the spec's idle timeout when it applies: a lazy server
// with one set; else zero.
func (s *Spec) idleTimeout() time.Duration {
	if !s.Lazy || s.IdleTimeout <= 0 {
		return 0
	}
	return s.IdleTimeout
}

// idleClock is serve's timer for the idle timeout. Its channel is nil while
// no idle timeout applies.
type idleClock struct {
	spec *atomic.Pointer[Spec]
	gate *gate
	t    *time.Timer
}

// C is the channel that fires when the idle timeout may have passed.
func (c *idleClock) C() <-chan time.Time {
	if c.t == nil {
		return nil
	}
	return c.t.C
}

// reset arms the timer for when the server will have been idle for its
// timeout, counted from its last use; with a request in flight, a whole
// timeout from now (the request's end moves the last use anyway). It
// disarms it when no idle timeout applies, after a reload for example.
func (c *idleClock) reset() {
	d := c.spec.Load().idleTimeout()
	if d <= 0 {
		c.stop()
		return
	}
	d = c.gate.idleIn(d)
	if c.t == nil {
		c.t = time.NewTimer(max(d, 0))
		return
	}
	c.t.Reset(max(d, 0))
}

func (c *idleClock) stop() {
	if c.t != nil {
		c.t.Stop()
		c.t = nil
	}
}

// idleStop reports whether the session may stop for being idle, and if so
// withdraws it, so that no call takes it any more. The gate decides and
// withdraws under its lock, and a call counts itself in flight there before
// it looks at the session again (acquireLive): either the call entered
// first and the session stays, or the call finds it gone and waits for the
// next start.
func (sv *supervisor) idleStop() bool {
	d := sv.sp().idleTimeout()
	return d > 0 && sv.gate.stopIfIdle(d, sv.sess.withdraw)
}

// stopIdle stops the session of a lazy server that went idle and ends the
// supervisor loop; the next call starts a new one (ensureStarted), which
// waits until this stop finished, so two instances never overlap.
func (sv *supervisor) stopIdle(s *session) {
	stopped := make(chan struct{})
	sv.mu.Lock()
	sv.running = false
	sv.prevStop = stopped
	sv.mu.Unlock()
	sv.log.Info("upstream idle, stopping", "duration", sv.sp().idleTimeout())
	sv.setState(StateIdle, "")
	s.close()
	close(stopped)
}

// awaitPreviousStop waits for the stop of the session an idle timeout
// ended, if it is still going on. It returns false when the Handle is
// closing.
func (sv *supervisor) awaitPreviousStop() bool {
	sv.mu.Lock()
	prev := sv.prevStop
	sv.mu.Unlock()
	if prev == nil {
		return true
	}
	select {
	case <-prev:
		return true
	case <-sv.life.ctx.Done():
		return false
	}
}

// kickIdle makes a running session's idle clock take a changed spec into
// account.
func (sv *supervisor) kickIdle() {
	select {
	case sv.idleKick <- struct{}{}:
	default:
	}
}
