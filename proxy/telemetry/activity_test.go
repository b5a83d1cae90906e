package telemetry

import (
	"slices"
	"testing"
	"time"
)

// TestActivityMinutes checks the per-minute buckets: counts land in the
// current minute, older minutes shift left, a bucket reused a ring later
// starts from zero, and minutes with no call read zero.
func TestActivityMinutes(t *testing.T) {
	now := time.Unix(60*1000, 0)
	a := &Activity{now: func() time.Time { return now }}
	a.Record("v", "ok")
	a.Record("v", "tool_error")
	a.Record("v", "rate_limited")
	a.Record("v", "task") // the server runs it as a task: no error
	now = now.Add(time.Minute)
	a.Record("v", "ok")
	got := a.View("v")
	wantCalls := make([]int64, ActivityMinutes)
	wantCalls[ActivityMinutes-2], wantCalls[ActivityMinutes-1] = 4, 1
	if !slices.Equal(got.Calls, wantCalls) {
		t.Errorf("calls %v, want %v", got.Calls, wantCalls)
	}
	if got.Errors[ActivityMinutes-2] != 1 || got.RateLimited[ActivityMinutes-2] != 1 || got.Errors[ActivityMinutes-1] != 0 {
		t.Errorf("errors %v rate limited %v, want one of each in the minute before", got.Errors, got.RateLimited)
	}
	if got.CallsPerMinute != 5 || got.ErrorsPerMinute != 1 {
		t.Errorf("per minute %d calls %d errors, want 5 and 1 at the start of a minute", got.CallsPerMinute, got.ErrorsPerMinute)
	}
	// A ring later, the first minute's bucket is reused from zero.
	now = now.Add((ActivityMinutes - 1) * time.Minute)
	a.Record("v", "ok")
	got = a.View("v")
	if sum := got.Calls[ActivityMinutes-1]; sum != 1 {
		t.Errorf("reused bucket counts %d, want 1", sum)
	}
	if got.Calls[0] != 1 {
		t.Errorf("oldest minute %d, want the 1 call of the second minute", got.Calls[0])
	}
	if empty := a.View("other"); len(empty.Calls) != ActivityMinutes || empty.CallsPerMinute != 0 {
		t.Errorf("a view with no call: %+v", empty)
	}
	a.Keep(func(string) bool { return false })
	if a.View("v").Calls[ActivityMinutes-1] != 0 {
		t.Error("Keep did not drop the view")
	}
}
