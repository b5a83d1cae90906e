package proxy

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, DefaultGOGC},
		{2 << 20, DefaultGOGC}, // a sidecar: 8 MiB of headroom
		{4 << 20, DefaultGOGC}, // exactly the cap
		{8 << 20, 200},         // headroom held at 16 MiB
		{12 << 20, 133},        // a flood of notifications queued
		{16 << 20, 100},        // Go's default from here on
		{25 << 20, 100},        // 1000 idle sessions
		{1 << 30, 100},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestTuneGCFollowsLiveHeap: with GOGC unset, the target follows the live
// heap after collections; with GOGC set, it is left alone.
func TestTuneGCFollowsLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	tuneGC(ctx, func(string) string { return "150" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set by the operator was changed to %d", got)
	}

	tuneGC(ctx, func(string) string { return "" })
	if got := gcPercent(); got != DefaultGOGC {
		t.Fatalf("after tuneGC: GOGC %d, want %d", got, DefaultGOGC)
	}
	live := make([][]byte, 0, 64) // 64 MiB held: the target must fall to 100
	for range 64 {
		live = append(live, make([]byte, 1<<20))
	}
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d with %d MiB live", gcPercent(), len(live))
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
	live = nil
	for gcPercent() != DefaultGOGC {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after the heap was released", gcPercent())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func gcPercent() int {
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(sample)
	return int(sample[0].Value.Uint64())
}
