package policy_test

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/policy"
)

func TestLimitValidate(t *testing.T) {
	tests := []struct {
		name     string
		limit    policy.Limit
		wantErrs []string
	}{
		{name: "zero is unlimited", limit: policy.Limit{}},
		{name: "rate only", limit: policy.Limit{CallsPerMinute: 60}},
		{name: "rate and burst", limit: policy.Limit{CallsPerMinute: 60, Burst: 5}},
		{name: "negative rate", limit: policy.Limit{CallsPerMinute: -1}, wantErrs: []string{"callsPerMinute: must not be negative"}},
		{name: "negative burst", limit: policy.Limit{CallsPerMinute: 1, Burst: -1}, wantErrs: []string{"burst: must not be negative"}},
		{name: "burst without rate", limit: policy.Limit{Burst: 3}, wantErrs: []string{"burst: requires callsPerMinute"}},
		{name: "too fast", limit: policy.Limit{CallsPerMinute: policy.MaxCallsPerMinute + 1}, wantErrs: []string{"callsPerMinute: must be at most"}},
		{name: "too bursty", limit: policy.Limit{CallsPerMinute: 1, Burst: policy.MaxBurst + 1}, wantErrs: []string{"burst: must be at most"}},
		{
			name:     "both wrong",
			limit:    policy.Limit{CallsPerMinute: -5, Burst: -5},
			wantErrs: []string{"callsPerMinute: must not be negative", "burst: must not be negative"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.limit.Validate()
			if len(tt.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want %q", tt.wantErrs)
			}
			for _, w := range tt.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLimiterUnlimited(t *testing.T) {
	tests := []struct {
		name string
		l    *policy.Limiter
	}{
		{name: "nil limiter", l: nil},
		{name: "zero limit", l: policy.NewLimiter(policy.Limit{})},
		{name: "negative limit", l: policy.NewLimiter(policy.Limit{CallsPerMinute: -1})},
	}
	now := time.Unix(1_700_000_000, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range 1000 {
				if ok, retry := tt.l.Allow("agent", now); !ok || retry != 0 {
					t.Fatalf("call %d: Allow = %v, %v; want true, 0", i, ok, retry)
				}
			}
		})
	}
}

type step struct {
	at        time.Duration // since start
	key       string
	wantOK    bool
	wantRetry time.Duration
}

func runSteps(t *testing.T, l *policy.Limiter, steps []step) {
	t.Helper()
	start := time.Unix(1_700_000_000, 0)
	for i, s := range steps {
		key := s.key
		if key == "" {
			key = "agent"
		}
		ok, retry := l.Allow(key, start.Add(s.at))
		if ok != s.wantOK || retry != s.wantRetry {
			t.Errorf("step %d (at %v, key %q): Allow = %v, %v; want %v, %v", i, s.at, key, ok, retry, s.wantOK, s.wantRetry)
		}
	}
}

func TestLimiter(t *testing.T) {
	tests := []struct {
		name  string
		limit policy.Limit
		steps []step
	}{
		{
			name:  "burst consumed then retry after one interval",
			limit: policy.Limit{CallsPerMinute: 60, Burst: 3},
			steps: []step{
				{at: 0, wantOK: true},
				{at: 0, wantOK: true},
				{at: 0, wantOK: true},
				{at: 0, wantOK: false, wantRetry: time.Second},
				{at: 400 * time.Millisecond, wantOK: false, wantRetry: 600 * time.Millisecond},
				{at: time.Second, wantOK: true},
				{at: time.Second, wantOK: false, wantRetry: time.Second},
			},
		},
		{
			name:  "refill is capped at burst",
			limit: policy.Limit{CallsPerMinute: 60, Burst: 2},
			steps: []step{
				{at: 0, wantOK: true},
				{at: 0, wantOK: true},
				{at: 0, wantOK: false, wantRetry: time.Second},
				{at: time.Hour, wantOK: true},
				{at: time.Hour, wantOK: true},
				{at: time.Hour, wantOK: false, wantRetry: time.Second},
			},
		},
		{
			name:  "partial refill",
			limit: policy.Limit{CallsPerMinute: 6, Burst: 3}, // one token per 10s
			steps: []step{
				{at: 0, wantOK: true},
				{at: 0, wantOK: true},
				{at: 0, wantOK: true},
				{at: 25 * time.Second, wantOK: true},
				{at: 25 * time.Second, wantOK: true},
				{at: 25 * time.Second, wantOK: false, wantRetry: 5 * time.Second},
				{at: 30 * time.Second, wantOK: true},
			},
		},
		{
			name:  "burst defaults to calls per minute",
			limit: policy.Limit{CallsPerMinute: 2},
			steps: []step{
				{at: 0, wantOK: true},
				{at: 0, wantOK: true},
				{at: 0, wantOK: false, wantRetry: 30 * time.Second},
				{at: 30 * time.Second, wantOK: true},
			},
		},
		{
			name:  "denied calls do not consume",
			limit: policy.Limit{CallsPerMinute: 60, Burst: 1},
			steps: []step{
				{at: 0, wantOK: true},
				{at: 0, wantOK: false, wantRetry: time.Second},
				{at: 0, wantOK: false, wantRetry: time.Second},
				{at: 0, wantOK: false, wantRetry: time.Second},
				{at: time.Second, wantOK: true},
			},
		},
		{
			name:  "keys are independent",
			limit: policy.Limit{CallsPerMinute: 60, Burst: 1},
			steps: []step{
				{at: 0, key: "a", wantOK: true},
				{at: 0, key: "a", wantOK: false, wantRetry: time.Second},
				{at: 0, key: "b", wantOK: true},
				{at: 0, key: "b", wantOK: false, wantRetry: time.Second},
			},
		},
		{
			name:  "clock stepping backwards does not grant tokens",
			limit: policy.Limit{CallsPerMinute: 60, Burst: 1},
			steps: []step{
				{at: 10 * time.Second, wantOK: true},
				{at: 5 * time.Second, wantOK: false, wantRetry: 6 * time.Second},
				{at: 11 * time.Second, wantOK: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, policy.NewLimiter(tt.limit), tt.steps)
		})
	}
}

func TestLimiterMonotonicClock(t *testing.T) {
	l := policy.NewLimiter(policy.Limit{CallsPerMinute: 1, Burst: 1})
	if ok, _ := l.Allow("a", time.Now()); !ok {
		t.Fatal("first call denied")
	}
	ok, retry := l.Allow("a", time.Now())
	if ok || retry <= 59*time.Second || retry > time.Minute {
		t.Fatalf("second call: Allow = %v, %v; want false, about 1m", ok, retry)
	}
}

func TestLimiterSweepBoundsKeys(t *testing.T) {
	l := policy.NewLimiter(policy.Limit{CallsPerMinute: 60, Burst: 5}) // refills in 5s
	start := time.Unix(1_700_000_000, 0)
	for i := range 1000 {
		l.Allow("token-"+strconv.Itoa(i), start)
	}
	if n := l.Len(); n != 1000 {
		t.Fatalf("Len = %d after 1000 keys, want 1000", n)
	}
	// A minute later every bucket has refilled; the next call sweeps them.
	l.Allow("late", start.Add(2*time.Minute))
	if n := l.Len(); n != 1 {
		t.Fatalf("Len = %d after sweep, want 1", n)
	}
	// A swept key starts again with a full bucket.
	for i := range 5 {
		if ok, _ := l.Allow("token-0", start.Add(2*time.Minute)); !ok {
			t.Fatalf("call %d on a swept key denied", i)
		}
	}
}

func TestLimiterSweepKeepsRefillingBuckets(t *testing.T) {
	l := policy.NewLimiter(policy.Limit{CallsPerMinute: 1, Burst: 3}) // refills in 3m
	start := time.Unix(1_700_000_000, 0)
	for range 3 {
		l.Allow("busy", start)
	}
	l.Allow("other", start.Add(2*time.Minute)) // sweeps; "busy" is still refilling
	for i := range 2 {
		if ok, retry := l.Allow("busy", start.Add(2*time.Minute)); !ok {
			t.Fatalf("busy call %d: denied with retry %v; two tokens should have refilled", i, retry)
		}
	}
	if ok, _ := l.Allow("busy", start.Add(2*time.Minute)); ok {
		t.Fatal("busy: sweep forgot consumed tokens")
	}
}

func TestLimiterConcurrent(t *testing.T) {
	const burst, workers, calls = 50, 16, 50
	l := policy.NewLimiter(policy.Limit{CallsPerMinute: 60, Burst: burst})
	start := time.Unix(1_700_000_000, 0)
	var allowed [3]atomic.Int64
	phase := func(at time.Time) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range calls {
					k := (w + i) % len(allowed)
					if ok, _ := l.Allow("key-"+strconv.Itoa(k), at); ok {
						allowed[k].Add(1)
					}
				}
			})
		}
		wg.Wait()
	}
	phase(start)
	// 90s later every bucket is full again, and the first call sweeps, so
	// the sweep races with Allow on the same keys.
	phase(start.Add(90 * time.Second))
	for k := range allowed {
		if got := allowed[k].Load(); got != 2*burst {
			t.Errorf("key-%d: %d calls allowed, want %d", k, got, 2*burst)
		}
	}
}

func BenchmarkLimiterAllow(b *testing.B) {
	l := policy.NewLimiter(policy.Limit{CallsPerMinute: 1_000_000, Burst: 1_000_000})
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Allow("agent", now)
		}
	})
}

func TestLimiterSameRate(t *testing.T) {
	a := policy.NewLimiter(policy.Limit{CallsPerMinute: 2})
	for _, c := range []struct {
		o    *policy.Limiter
		want bool
	}{
		{policy.NewLimiter(policy.Limit{CallsPerMinute: 2}), true},
		{policy.NewLimiter(policy.Limit{CallsPerMinute: 2, Burst: 2}), true},
		{policy.NewLimiter(policy.Limit{CallsPerMinute: 2, Burst: 3}), false},
		{policy.NewLimiter(policy.Limit{CallsPerMinute: 3}), false},
		{nil, false},
	} {
		if got := a.SameRate(c.o); got != c.want {
			t.Errorf("SameRate(%+v) = %v, want %v", c.o, got, c.want)
		}
	}
	var none *policy.Limiter
	if !none.SameRate(nil) {
		t.Error("two nil limiters (unlimited) are not alike")
	}
}
