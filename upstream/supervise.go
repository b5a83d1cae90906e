package upstream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// supervisor runs a Handle's server: the loop that starts it, serves its
// session, restarts it with backoff or gives up, stops a lazy one that went
// idle, and reconnects a remote one early when calls ask. It owns the
// server's state as Status shows it.
type supervisor struct {
	spec     *atomic.Pointer[Spec] // the Handle's
	log      hclog.Logger
	life     *lifetime
	onChange func() // Options.OnChange, with the Handle

	conn *connector
	cat  *catalogStore
	sess *sessionSlot
	brk  *breaker
	gate *gate

	firstDone   chan struct{} // closed when the first start attempt finished
	firstOnce   sync.Once
	retry       chan struct{} // wakes a supervisor waiting for its next attempt (Restart)
	early       chan struct{} // asks a remote server's supervisor for an attempt now (wantAttempt)
	idleKick    chan struct{} // the idle timeout may have changed (Update)
	lastAttempt atomic.Int64  // unix nanos when the last connect attempt started

	mu          sync.Mutex
	shut        bool // Close began: no loop starts any more
	state       State
	since       time.Time
	upSince     time.Time
	changed     chan struct{} // closed and replaced at every state change
	lastErr     string
	restarts    int
	failures    int
	nextAttempt time.Time
	pid         int
	running     bool          // the loop runs: started, not given up (Restart), not idle
	prevStop    chan struct{} // closed when the session an idle timeout ended is stopped
	protocol    string
}

func newSupervisor(spec *atomic.Pointer[Spec], log hclog.Logger, life *lifetime) supervisor {
	return supervisor{
		spec: spec, log: log, life: life,
		firstDone: make(chan struct{}),
		retry:     make(chan struct{}, 1),
		early:     make(chan struct{}, 1),
		idleKick:  make(chan struct{}, 1),
		state:     StateIdle,
		since:     time.Now(),
		changed:   make(chan struct{}),
	}
}

// sp is the current spec.
func (sv *supervisor) sp() *Spec { return sv.spec.Load() }

// ensureStarted starts the loop of a server that is idle: never
// started, or a lazy one stopped after its idle timeout. A server that
// failed is left alone (Restart brings it back).
func (sv *supervisor) ensureStarted() {
	sv.mu.Lock()
	if sv.running || sv.state != StateIdle || sv.shut || sv.life.ctx.Err() != nil {
		sv.mu.Unlock()
		return
	}
	sv.running = true
	sv.life.wg.Add(1) // under sv.mu: Close sets shut under it before it waits
	sv.mu.Unlock()
	sv.setState(StateStarting, "")
	go sv.run()
}

func (sv *supervisor) finishFirst() { sv.firstOnce.Do(func() { close(sv.firstDone) }) }

// shutDown keeps any loop from starting from now on (Close).
func (sv *supervisor) shutDown() {
	sv.mu.Lock()
	sv.shut = true
	sv.mu.Unlock()
}

// watch is the server's state, a channel closed at its next change, when
// the next attempt is due and the last error.
func (sv *supervisor) watch() (st State, changed <-chan struct{}, next time.Time, lastErr string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.state, sv.changed, sv.nextAttempt, sv.lastErr
}

// current is the server's state.
func (sv *supervisor) current() State {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.state
}

// status fills in what Status says about the server's state.
func (sv *supervisor) status(st *Status) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	st.State, st.PID, st.Protocol = sv.state, sv.pid, sv.protocol
	st.Restarts, st.Failures, st.LastError = sv.restarts, sv.failures, sv.lastErr
	st.Since, st.UpSince, st.NextAttempt = sv.since, sv.upSince, sv.nextAttempt
}

// await starts a server that is idle and waits until it is no longer idle
// or starting (see Handle.Await).
func (sv *supervisor) await(ctx context.Context) bool {
	sv.ensureStarted()
	deadline := time.NewTimer(sv.sp().connectTimeout())
	defer deadline.Stop()
	for {
		st, ch, _, _ := sv.watch()
		if st != StateIdle && st != StateStarting {
			return st == StateReady
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		}
	}
}

// setState enters state s (again, if it is the current one: waiters wake
// either way), keeps lastErr unless it is empty, and tells onChange.
func (sv *supervisor) setState(s State, lastErr string) {
	sv.mu.Lock()
	if s != sv.state {
		sv.state = s
		sv.since = time.Now()
	}
	if s != StateReady {
		sv.pid = 0 // a PID is reported only for the session that is up
	}
	if lastErr != "" {
		sv.lastErr = lastErr
	}
	close(sv.changed)
	sv.changed = make(chan struct{})
	sv.mu.Unlock()
	sv.onChange()
}

// errRestartRequested ends a session that Restart asked to start anew.
var errRestartRequested = errors.New("restart requested")

// restart brings the server back now, with its failure count reset (see
// Handle.Restart).
func (sv *supervisor) restart() bool {
	sv.mu.Lock()
	if sv.shut || sv.life.ctx.Err() != nil {
		sv.mu.Unlock()
		return false
	}
	sv.failures = 0
	switch {
	case sv.running:
		sv.mu.Unlock()
		// The supervisor ends a running session, or skips the wait for its
		// next attempt.
		select {
		case sv.retry <- struct{}{}:
		default:
		}
		return true
	case sv.state == StateIdle:
		sv.mu.Unlock()
		return false
	}
	sv.running = true
	sv.life.wg.Add(1) // under sv.mu: Close sets shut under it before it waits
	sv.mu.Unlock()
	sv.setState(StateStarting, "")
	go sv.run()
	return true
}

// run is the supervisor loop. It owns the session and is the only writer of
// sv.sess and sv.cat while the Handle is open.
func (sv *supervisor) run() {
	defer sv.life.wg.Done()
	defer sv.finishFirst()
	if !sv.awaitPreviousStop() {
		return
	}
	var next time.Time // when the next attempt is due; zero: now
	for {
		early, ok := sv.sleepUntil(next)
		if !ok {
			return
		}
		sv.lastAttempt.Store(time.Now().UnixNano())
		s, cat, err := sv.conn.connect(sv.life.ctx)
		if err != nil {
			if sv.life.ctx.Err() != nil {
				return
			}
			if early && !errors.Is(err, ErrPermanent) {
				// An extra attempt a call asked for: the schedule and
				// the failure count stay as they were.
				sv.earlyFailed(err)
				continue
			}
			next, ok = sv.fail(err, true)
			sv.finishFirst()
			if !ok {
				return
			}
			continue
		}
		sv.publish(s, cat)
		sv.finishFirst()
		if next, ok = sv.ended(s); !ok {
			return
		}
	}
}

// ended serves a published session until it ends, stops it, and returns
// when to try again, or false when the loop must end: the Handle is
// closing, the server gave up, or a lazy server went idle.
//
// A run that answered a call, or stayed ready for healthyRunTime, was
// healthy: its end starts the failure count and the backoff over, and its
// crash is restarted after the first backoff step without counting
// towards maxRestarts. A run that ended sooner without answering anything
// counts as a failed start, as a start that failed before initialize did:
// a server that initializes and dies at once is a crash loop all the same.
func (sv *supervisor) ended(s *session) (time.Time, bool) {
	started := time.Now()
	werr := sv.serve(s)
	sv.sess.withdraw()
	if sv.life.ctx.Err() != nil {
		s.close()
		return time.Time{}, false
	}
	healthy := s.answered.Load() || time.Since(started) >= healthyRunTime
	if healthy {
		sv.mu.Lock()
		sv.failures = 0
		sv.mu.Unlock()
	}
	switch {
	case errors.Is(werr, errRestartRequested):
		sv.log.Info("upstream restarted on request")
		sv.setState(StateRestarting, werr.Error())
		s.close()
		return time.Time{}, true
	case errors.Is(werr, errIdle):
		sv.stopIdle(s)
		return time.Time{}, false
	case werr == nil:
		werr = errors.New("session closed")
	}
	// Calls fail fast with "restarting" while the old process is
	// stopped; the backoff counts from the moment the session ended.
	next, ok := sv.fail(fmt.Errorf("session ended: %w", werr), !healthy)
	s.close()
	return next, ok
}

// fail records a failed start (counted) or the end of a healthy run (not
// counted: the count is zero), and decides what comes next: it returns
// when to try again, or false when the server must give up (a stdio server
// at its maxRestarts+1st failed start in a row, or any crash with
// maxRestarts 0 or restartOnCrash off; any server whose start failed for
// good: ErrPermanent). A remote server is otherwise never given up on;
// past maxRestarts its tools leave the list and it keeps being retried at
// the longest backoff. The delay is the first backoff step after a healthy
// run and after one failed start, doubled at each further one.
func (sv *supervisor) fail(err error, counted bool) (time.Time, bool) {
	sv.conn.forgetEra()
	sv.mu.Lock()
	if counted {
		sv.failures++
	}
	n := sv.failures
	sv.mu.Unlock()
	remote := sv.sp().remote()
	permanent := errors.Is(err, ErrPermanent)
	giveUp := !sv.sp().RestartOnCrash || sv.sp().MaxRestarts == 0 || n > sv.sp().MaxRestarts
	if permanent || giveUp && !remote {
		sv.cat.store(nil)
		sv.mu.Lock()
		sv.nextAttempt = time.Time{}
		// The loop ends now: from here Restart starts a new one.
		sv.running = false
		sv.mu.Unlock()
		if permanent {
			sv.log.Error("upstream failed", "error", err, "reason", "retrying cannot fix this: no restarts; a reload or restart tries again")
		} else {
			sv.log.Error("upstream failed", "error", err, "attempt", n)
		}
		sv.setState(StateFailed, err.Error())
		return time.Time{}, false
	}
	wait := sv.backoff(max(n, 1))
	if giveUp {
		wait = sv.backoff(maxBackoffStep)
	}
	next := time.Now().Add(wait)
	sv.mu.Lock()
	sv.nextAttempt = next
	sv.restarts++
	sv.mu.Unlock()
	if giveUp {
		sv.cat.store(nil)
		sv.log.Warn("upstream unreachable", "error", err, "attempt", n, "duration", wait)
		sv.setState(StateFailed, err.Error())
	} else {
		if counted {
			sv.log.Warn("upstream restart", "error", err, "attempt", n, "duration", wait)
		} else {
			sv.log.Warn("upstream restart", "error", err, "reason", "crash of a healthy run: not counted towards maxRestarts", "duration", wait)
		}
		sv.setState(StateRestarting, err.Error())
	}
	return next, true
}

// sleepUntil waits for the next attempt, due at next (zero: now). It
// returns early true when a call asked for an attempt before then
// (wantAttempt), which is made no sooner than earlyAttemptGap after the
// last one; ok is false when the Handle is closing.
func (sv *supervisor) sleepUntil(next time.Time) (early, ok bool) {
	var asked time.Time // when the attempt a call asked for is due
	for {
		due := next
		early = !asked.IsZero() && asked.Before(next)
		if early {
			due = asked
		}
		d := time.Until(due)
		if d <= 0 {
			return early, sv.life.ctx.Err() == nil
		}
		t := time.NewTimer(d)
		select {
		case <-sv.life.ctx.Done():
			t.Stop()
			return false, false
		case <-t.C:
			return early, true
		case <-sv.retry:
			t.Stop()
			return false, true
		case <-sv.early:
			t.Stop()
			asked = sv.earliestAttempt()
		}
	}
}

// maxBackoffStep is an attempt past every doubling: its delay is the
// longest.
const maxBackoffStep = 64

// backoff returns the delay before attempt n (1-based): BackoffInitial
// (1 s), doubled at each attempt up to BackoffMax (30 s), each ±10 %.
func (sv *supervisor) backoff(n int) time.Duration {
	sp := sv.sp()
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

func (sv *supervisor) publish(s *session, cat *Catalog) {
	sv.cat.store(cat)
	sv.brk.closeOnReconnect(sv.sp())
	sv.gate.touch()
	sv.sess.publish(sv.life.ctx, s, sv.sp().callTimeout())
	sv.mu.Lock()
	sv.pid = s.proc.pid()
	sv.upSince = time.Now()
	sv.nextAttempt = time.Time{}
	if ir := s.cl.initializeResult(); ir != nil {
		sv.protocol = ir.ProtocolVersion
	}
	sv.mu.Unlock()
	sv.log.Info("upstream ready", "tools", len(cat.Tools), "prompts", len(cat.Prompts), "resources", len(cat.Resources))
	sv.setState(StateReady, "")
}

// serve waits for the session to end, re-listing the catalog whenever the
// upstream says it changed, and the lists that failed on their backoff. It
// returns the session's end error, or nil when the Handle is closing.
func (sv *supervisor) serve(s *session) error {
	retry := &listRetry{}
	defer sv.cat.endRetry(retry)
	sv.cat.note(retry, sv.cat.load())
	idle := &idleClock{spec: sv.spec, gate: sv.gate}
	defer idle.stop()
	idle.reset()
	for {
		select {
		case <-s.cl.done:
			return s.cl.endErr
		case <-sv.life.ctx.Done():
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
			case <-sv.life.ctx.Done():
				return nil
			case <-t.C:
				return errConnectionLost
			}
		case <-sv.cat.resync:
			if only, due := sv.cat.takeStale(); due {
				if sv.cat.load() == nil {
					only = nil // nothing to keep the other lists from
				}
				sv.relist(s, retry, only)
			}
		case <-sv.retry:
			return errRestartRequested
		case <-retry.C():
			if cur := sv.cat.load(); cur != nil {
				sv.relist(s, retry, cur.failedLists())
			}
		case <-idle.C():
			if sv.idleStop() {
				return errIdle
			}
			idle.reset()
		case <-sv.idleKick:
			idle.reset()
		}
	}
}

// relist lists the catalog again on s and tells onChange if it changed.
func (sv *supervisor) relist(s *session, r *listRetry, only map[string]bool) {
	if sv.cat.relist(sv.life.ctx, s, sv.sp(), r, only) {
		sv.onChange()
	}
}
