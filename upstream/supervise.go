package upstream

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The supervisor: the loop that starts a server, serves its session,
// restarts it with backoff or gives up, and Restart, which brings it back
// on request.

// errRestartRequested ends a session that Restart asked to start anew.
var errRestartRequested = errors.New("restart requested")

// Restart brings the server back now, with its failure count reset: a
// stdio server that gave up starts again, one waiting for its next attempt
// tries at once, and a running one has its session ended and starts anew.
// It reports false, doing nothing, for a Handle that is closing or a lazy
// server that never started.
func (h *Handle) Restart() bool {
	h.mu.Lock()
	if h.gate.closed() || h.ctx.Err() != nil {
		h.mu.Unlock()
		return false
	}
	h.failures = 0
	switch {
	case h.running:
		h.mu.Unlock()
		// The supervisor ends a running session, or skips the wait for its
		// next attempt.
		select {
		case h.retry <- struct{}{}:
		default:
		}
		return true
	case h.state == StateIdle:
		h.mu.Unlock()
		return false
	}
	h.running = true
	h.wg.Add(1) // under h.mu: Close sets closing under it before it waits
	h.mu.Unlock()
	h.setState(StateStarting, "")
	go h.run()
	return true
}

// run is the supervisor loop. It owns the session and is the only writer of
// h.sess and h.catalog while the Handle is open.
func (h *Handle) run() {
	defer h.wg.Done()
	defer h.finishFirst()
	if !h.awaitPreviousStop() {
		return
	}
	var next time.Time // when the next attempt is due; zero: now
	for {
		early, ok := h.sleepUntil(next)
		if !ok {
			return
		}
		h.lastAttempt.Store(time.Now().UnixNano())
		s, cat, err := h.conn.connect(h.ctx)
		if err != nil {
			if h.ctx.Err() != nil {
				return
			}
			if early && !errors.Is(err, ErrPermanent) {
				// An extra attempt a call asked for: the schedule and
				// the failure count stay as they were.
				h.earlyFailed(err)
				continue
			}
			next, ok = h.fail(err)
			h.finishFirst()
			if !ok {
				return
			}
			continue
		}
		h.publish(s, cat)
		h.finishFirst()
		if next, ok = h.ended(s); !ok {
			return
		}
	}
}

// ended serves a published session until it ends, stops it, and returns
// when to try again, or false when the loop must end: the Handle is
// closing, the server gave up, or a lazy server went idle.
func (h *Handle) ended(s *session) (time.Time, bool) {
	started := time.Now()
	werr := h.serve(s)
	h.sess.withdraw()
	if h.ctx.Err() != nil {
		s.close()
		return time.Time{}, false
	}
	if time.Since(started) >= stableRunTime {
		h.mu.Lock()
		h.failures = 0
		h.mu.Unlock()
	}
	switch {
	case errors.Is(werr, errRestartRequested):
		h.log.Info("upstream restarted on request")
		h.setState(StateRestarting, werr.Error())
		s.close()
		return time.Time{}, true
	case errors.Is(werr, errIdle):
		h.stopIdle(s)
		return time.Time{}, false
	case werr == nil:
		werr = errors.New("session closed")
	}
	// Calls fail fast with "restarting" while the old process is
	// stopped; the backoff counts from the moment the session ended.
	next, ok := h.fail(fmt.Errorf("session ended: %w", werr))
	s.close()
	return next, ok
}

// fail records a failed start or a lost session, and decides what comes
// next: it returns when to try again, or false when the server must give up
// (a stdio server after maxRestarts consecutive failures, any server whose
// start failed for good: ErrPermanent). A remote server is otherwise never
// given up on; past maxRestarts its tools leave the list and it keeps being
// retried at the longest backoff.
func (h *Handle) fail(err error) (time.Time, bool) {
	h.conn.forgetEra()
	h.mu.Lock()
	h.failures++
	n := h.failures
	h.mu.Unlock()
	remote := h.sp().remote()
	permanent := errors.Is(err, ErrPermanent)
	giveUp := !h.sp().RestartOnCrash || n > h.sp().MaxRestarts
	if permanent || giveUp && !remote {
		h.cat.store(nil)
		h.mu.Lock()
		h.nextAttempt = time.Time{}
		// The loop ends now: from here Restart starts a new one.
		h.running = false
		h.mu.Unlock()
		if permanent {
			h.log.Error("upstream failed", "error", err, "reason", "retrying cannot fix this: no restarts; a reload or restart tries again")
		} else {
			h.log.Error("upstream failed", "error", err, "attempt", n)
		}
		h.setState(StateFailed, err.Error())
		return time.Time{}, false
	}
	wait := h.backoff(n)
	if giveUp {
		wait = h.backoff(maxBackoffStep)
	}
	next := time.Now().Add(wait)
	h.mu.Lock()
	h.nextAttempt = next
	h.restarts++
	h.mu.Unlock()
	if giveUp {
		h.cat.store(nil)
		h.log.Warn("upstream unreachable", "error", err, "attempt", n, "duration", wait)
		h.setState(StateFailed, err.Error())
	} else {
		h.log.Warn("upstream restart", "error", err, "attempt", n, "duration", wait)
		h.setState(StateRestarting, err.Error())
	}
	return next, true
}

// sleepUntil waits for the next attempt, due at next (zero: now). It
// returns early true when a call asked for an attempt before then
// (wantAttempt), which is made no sooner than earlyAttemptGap after the
// last one; ok is false when the Handle is closing.
func (h *Handle) sleepUntil(next time.Time) (early, ok bool) {
	var asked time.Time // when the attempt a call asked for is due
	for {
		due := next
		early = !asked.IsZero() && asked.Before(next)
		if early {
			due = asked
		}
		d := time.Until(due)
		if d <= 0 {
			return early, h.ctx.Err() == nil
		}
		t := time.NewTimer(d)
		select {
		case <-h.ctx.Done():
			t.Stop()
			return false, false
		case <-t.C:
			return early, true
		case <-h.retry:
			t.Stop()
			return false, true
		case <-h.early:
			t.Stop()
			asked = h.earliestAttempt()
		}
	}
}

// maxBackoffStep is an attempt past every doubling: its delay is the
// longest.
const maxBackoffStep = 64

// backoff returns the delay before attempt n (1-based): BackoffInitial
// (1 s), doubled at each attempt up to BackoffMax (30 s), each ±10 %.
func (h *Handle) backoff(n int) time.Duration {
	sp := h.sp()
	return backoffDelay(n, sp.BackoffInitial, sp.BackoffMax)
}

func backoffDelay(n int, base, ceil time.Duration) time.Duration {
	if base <= 0 {
		base = backoffBase
	}
	if ceil <= 0 {
		ceil = backoffMax
	}
	d := base
	for i := 1; i < n && d < ceil; i++ {
		d *= 2
	}
	d = min(d, ceil)
	jitter := (rand.Float64()*0.2 - 0.1) * float64(d)
	return d + time.Duration(jitter)
}

func (h *Handle) publish(s *session, cat *Catalog) {
	h.cat.store(cat)
	h.brk.closeOnReconnect(h.sp())
	h.gate.touch()
	h.sess.publish(h.ctx, s, h.sp().callTimeout())
	h.mu.Lock()
	h.pid = s.proc.pid()
	h.upSince = time.Now()
	h.nextAttempt = time.Time{}
	if ir := s.cl.initializeResult(); ir != nil {
		h.protocol = ir.ProtocolVersion
	}
	h.mu.Unlock()
	h.log.Info("upstream ready", "tools", len(cat.Tools), "prompts", len(cat.Prompts), "resources", len(cat.Resources))
	h.setState(StateReady, "")
}

// serve waits for the session to end, re-listing the catalog whenever the
// upstream says it changed, and the lists that failed on their backoff. It
// returns the session's end error, or nil when the Handle is closing.
func (h *Handle) serve(s *session) error {
	retry := &listRetry{}
	defer h.cat.endRetry(retry)
	h.cat.note(retry, h.cat.load())
	idle := &idleClock{h: h}
	defer idle.stop()
	idle.reset()
	for {
		select {
		case <-s.cl.done:
			return s.cl.endErr
		case <-h.ctx.Done():
			return nil
		case <-s.lost:
			if s.proc == nil {
				// A remote connection's end says no more than the call
				// that saw it break: reconnect now.
				return fmt.Errorf("%w: %w", errConnectionLost, s.lostErr)
			}
			t := time.NewTimer(lostGrace)
			defer t.Stop()
			select {
			case <-s.cl.done:
				return s.cl.endErr
			case <-h.ctx.Done():
				return nil
			case <-t.C:
				return errConnectionLost
			}
		case <-h.cat.resync:
			h.relist(s, retry, nil)
		case <-h.retry:
			return errRestartRequested
		case <-retry.C():
			if cur := h.cat.load(); cur != nil {
				h.relist(s, retry, cur.failedLists())
			}
		case <-idle.C():
			if h.idleStop() {
				return errIdle
			}
			idle.reset()
		case <-h.idleKick:
			idle.reset()
		}
	}
}

// relist lists the catalog again on s and tells OnChange if it changed.
func (h *Handle) relist(s *session, r *listRetry, only map[string]bool) {
	if h.cat.relist(h.ctx, s, h.sp(), r, only) && h.opt.OnChange != nil {
		h.opt.OnChange(h)
	}
}
