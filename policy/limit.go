package policy

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// MaxCallsPerMinute and MaxBurst bound a Limit, which keeps the limiter's
// nanosecond arithmetic far from overflow.
const (
	MaxCallsPerMinute = 1_000_000
	MaxBurst          = 1_000_000
)

// Limit is a call rate limit as written in config (DESIGN §4: calls per
// minute per agent or token).
type Limit struct {
	// CallsPerMinute is the sustained rate. If zero, calls are not limited.
	CallsPerMinute int `json:"callsPerMinute"`
	// Burst is how many calls may be made at once after a quiet period.
	// If zero, CallsPerMinute is used.
	Burst int `json:"burst,omitempty"`
}

// Validate reports every problem with l, each named by its config key,
// joined with errors.Join.
func (l Limit) Validate() error {
	var errs []error
	switch {
	case l.CallsPerMinute < 0:
		errs = append(errs, errors.New("callsPerMinute: must not be negative"))
	case l.CallsPerMinute > MaxCallsPerMinute:
		errs = append(errs, errors.New("callsPerMinute: must be at most 1000000"))
	}
	switch {
	case l.Burst < 0:
		errs = append(errs, errors.New("burst: must not be negative"))
	case l.Burst > MaxBurst:
		errs = append(errs, errors.New("burst: must be at most 1000000"))
	case l.Burst > 0 && l.CallsPerMinute == 0:
		errs = append(errs, errors.New("burst: requires callsPerMinute"))
	}
	return errors.Join(errs...)
}

// sweepEvery is how often, in the limiter's own clock (the now values passed
// to Allow), idle buckets are dropped.
const sweepEvery = time.Minute

// dead marks a bucket removed by a sweep. A caller that loads it retries with
// a fresh bucket, so a consumption can never land in a bucket that is no
// longer in the map.
const dead = math.MinInt64

// neverSwept is the initial lastSweep: far enough in the past that the first
// Allow sweeps, near enough that subtracting it from any clock reading within
// a century of the limiter's creation cannot overflow.
const neverSwept = math.MinInt64 / 2

// Limiter is a token bucket per key (an agent or a token), implemented as a
// generic cell rate algorithm: each bucket is one atomic "theoretical arrival
// time", so Allow takes no mutex of its own; keys are found in a sync.Map.
//
// Memory: a bucket whose tokens have fully refilled carries no state, so a
// sweep drops it. Allow runs a sweep inline at most once per minute of the
// now values it is given. The map therefore holds the keys seen in the last
// minute plus those still refilling (at most Burst/CallsPerMinute minutes
// after their last call).
//
// A nil *Limiter allows every call. A Limiter is safe for concurrent use.
type Limiter struct {
	interval  int64     // nanoseconds per token
	tolerance int64     // burst * interval
	base      time.Time // origin of the nanosecond clock, for monotonic readings
	lastSweep atomic.Int64
	buckets   sync.Map // string -> *bucket
}

// bucket holds the time, in nanoseconds since Limiter.base, at which the
// bucket will be full again (tat). A tat at or before now means full.
type bucket struct {
	tat atomic.Int64
}

// NewLimiter returns a limiter for l, or nil (which allows every call) if
// l.CallsPerMinute is zero or negative. It expects a validated Limit; values
// above the maxima are clamped.
func NewLimiter(l Limit) *Limiter {
	if l.CallsPerMinute <= 0 {
		return nil
	}
	cpm := min(l.CallsPerMinute, MaxCallsPerMinute)
	burst := l.Burst
	if burst <= 0 {
		burst = cpm
	}
	burst = min(burst, MaxBurst)
	interval := int64(time.Minute) / int64(cpm)
	lim := &Limiter{
		interval:  interval,
		tolerance: interval * int64(burst),
		base:      time.Now(),
	}
	lim.lastSweep.Store(neverSwept)
	return lim
}

// SameRate reports whether l and o limit alike (the same rate and burst);
// nil limiters (unlimited) are alike only to each other.
func (l *Limiter) SameRate(o *Limiter) bool {
	if l == nil || o == nil {
		return l == o
	}
	return l.interval == o.interval && l.tolerance == o.tolerance
}

// Allow takes one token from key's bucket at time now. If none is left it
// reports false and how long until one will be. It is safe for concurrent use
// and nil-safe.
//
// Pass time.Now(): its monotonic reading keeps the limiter correct across
// wall-clock steps. Tests may pass any sequence of times.
func (l *Limiter) Allow(key string, now time.Time) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	t := int64(now.Sub(l.base))
	l.maybeSweep(t)
	for {
		b := l.bucket(key, t)
		old := b.tat.Load()
		if old == dead {
			l.buckets.CompareAndDelete(key, b)
			continue
		}
		next := max(old, t) + l.interval
		if wait := next - t - l.tolerance; wait > 0 {
			return false, time.Duration(wait)
		}
		if b.tat.CompareAndSwap(old, next) {
			return true, 0
		}
	}
}

// bucket returns key's bucket, creating a full one at time t if needed.
func (l *Limiter) bucket(key string, t int64) *bucket {
	if v, ok := l.buckets.Load(key); ok {
		return v.(*bucket)
	}
	b := new(bucket)
	b.tat.Store(t)
	v, _ := l.buckets.LoadOrStore(key, b)
	return v.(*bucket)
}

// maybeSweep drops full buckets if a sweep is due at time t. Only the caller
// that wins the race for lastSweep sweeps. A clock that steps backwards
// postpones sweeps until it has caught up; it never makes one unsafe, since a
// sweep only drops buckets that are full at t.
func (l *Limiter) maybeSweep(t int64) {
	last := l.lastSweep.Load()
	if t-last < int64(sweepEvery) || !l.lastSweep.CompareAndSwap(last, t) {
		return
	}
	l.buckets.Range(func(k, v any) bool {
		b := v.(*bucket)
		if old := b.tat.Load(); old != dead && old <= t && b.tat.CompareAndSwap(old, dead) {
			l.buckets.CompareAndDelete(k, b)
		}
		return true
	})
}
