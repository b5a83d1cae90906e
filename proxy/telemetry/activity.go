package telemetry

import (
	"sync"
	"sync/atomic"
	"time"
)

// ActivityMinutes is how many minutes of activity a view keeps.
const ActivityMinutes = 15

// Activity counts the tool calls of every view per minute, for the last
// ActivityMinutes minutes: what the status page draws. Recording a call is
// a map load and atomic adds, no lock. A bucket is zeroed by the first call
// of its new minute; a call counted in the same instant by another
// goroutine may be lost then: the counts are for a glance, not billing.
type Activity struct {
	views sync.Map // view ID -> *ring
	now   func() time.Time
}

// NewActivity makes an empty Activity.
func NewActivity() *Activity { return &Activity{now: time.Now} }

// ring is one view's buckets, indexed by minute modulo ActivityMinutes.
type ring [ActivityMinutes]bucket

type bucket struct {
	minute  atomic.Int64 // Unix minute the counts are of
	calls   atomic.Int64
	errors  atomic.Int64
	limited atomic.Int64
}

// Record counts one call of view that ended in outcome (the audit
// record's: "ok" or "task" (the server runs the call as a task),
// "rate_limited", anything else is an error).
func (a *Activity) Record(view, outcome string) {
	if a == nil {
		return
	}
	r, ok := a.views.Load(view)
	if !ok {
		r, _ = a.views.LoadOrStore(view, new(ring))
	}
	m := a.now().Unix() / 60
	b := &r.(*ring)[m%ActivityMinutes]
	if old := b.minute.Load(); old != m && b.minute.CompareAndSwap(old, m) {
		b.calls.Store(0)
		b.errors.Store(0)
		b.limited.Store(0)
	}
	b.calls.Add(1)
	switch outcome {
	case "ok", "task":
	case "rate_limited":
		b.limited.Add(1)
	default:
		b.errors.Add(1)
	}
}

// ViewActivity is one view's last minutes, oldest first; the last entry
// is the current minute, so far.
type ViewActivity struct {
	Calls       []int64 `json:"calls"`
	Errors      []int64 `json:"errors"`
	RateLimited []int64 `json:"rateLimited"`
	// CallsPerMinute and ErrorsPerMinute are over the last 60 seconds:
	// the current minute and the part of the one before still inside them.
	CallsPerMinute  int64 `json:"callsPerMinute"`
	ErrorsPerMinute int64 `json:"errorsPerMinute"`
}

// View is view's activity now.
func (a *Activity) View(view string) ViewActivity {
	va := ViewActivity{Calls: make([]int64, ActivityMinutes), Errors: make([]int64, ActivityMinutes),
		RateLimited: make([]int64, ActivityMinutes)}
	if a == nil {
		return va
	}
	v, ok := a.views.Load(view)
	if !ok {
		return va
	}
	now := a.now()
	m := now.Unix() / 60
	for i := range ActivityMinutes {
		want := m - int64(ActivityMinutes-1-i)
		b := &v.(*ring)[want%ActivityMinutes]
		if b.minute.Load() != want {
			continue
		}
		va.Calls[i], va.Errors[i], va.RateLimited[i] = b.calls.Load(), b.errors.Load(), b.limited.Load()
	}
	rest := float64(60-now.Unix()%60) / 60 // of the previous minute, still in the last 60 s
	last, prev := ActivityMinutes-1, ActivityMinutes-2
	va.CallsPerMinute = va.Calls[last] + int64(float64(va.Calls[prev])*rest)
	va.ErrorsPerMinute = va.Errors[last] + int64(float64(va.Errors[prev])*rest)
	return va
}

// Keep drops the views keep reports false for (views a reload removed).
func (a *Activity) Keep(keep func(view string) bool) {
	a.views.Range(func(k, _ any) bool {
		if !keep(k.(string)) {
			a.views.Delete(k)
		}
		return true
	})
}
