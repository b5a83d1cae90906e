package gctune

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
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

// TestTuneGCFollowsLiveHeap: with GOGC unset, the target is Go's own
// until start-up is over, then follows the live heap after collections;
// with GOGC set, it is left alone.
func TestTuneGCFollowsLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	Tune(ctx, func(string) string { return "150" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set by the operator was changed to %d", got)
	}

	Tune(ctx, func(string) string { return "" })
	if got := gcPercent(); got != startupGOGC {
		t.Fatalf("after Tune: GOGC %d, want %d while starting", got, startupGOGC)
	}
	if gogc, _ := Settings(); gogc != strconv.Itoa(DefaultGOGC) {
		t.Fatalf("Settings while starting: gogc=%s, want the target after start-up, %d", gogc, DefaultGOGC)
	}
	// A wait for a non-event: the tuner's cleanup runs after each
	// collection and must leave GOGC alone before start-up ends. Nothing
	// shows that a cleanup ran without changing anything (cleanups run
	// concurrently, so one of the test's own would not tell either), so
	// each collection gets a fixed pause for it. A slow machine can only
	// make this check pass without looking, never fail.
	for range 3 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if got := gcPercent(); got != startupGOGC {
		t.Fatalf("collections before start-up ended set GOGC %d, want %d", got, startupGOGC)
	}
	ReleaseStartupMemory(ctx, func(context.Context) {})
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != DefaultGOGC {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after start-up, want %d", gcPercent(), DefaultGOGC)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	live := make([][]byte, 0, 64) // 64 MiB held: the target must fall to 100
	for range 64 {
		live = append(live, make([]byte, 1<<20))
	}
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

// TestIdleReleaser: a release comes once allocation stops after a burst,
// once per burst; never while allocation goes on, nor after a small burst.
func TestIdleReleaser(t *testing.T) {
	var allocs uint64
	releases := 0
	r := &idleReleaser{allocs: func() uint64 { return allocs }, release: func() { releases++ },
		binaryGrown: func() bool { return false }, releaseBinary: func() { t.Fatal("binary released, not grown") }}
	step := func(n uint64, ticks int) {
		for range ticks {
			allocs += n
			r.tick()
		}
	}
	step(1<<20, 20) // 20 MiB, busy all along
	if releases != 0 {
		t.Fatalf("%d releases while busy", releases)
	}
	step(0, idleQuietTicks)
	if releases != 1 {
		t.Fatalf("%d releases after going quiet, want 1", releases)
	}
	step(idleAllocs, 10) // an idle process's own trickle
	if releases != 1 {
		t.Fatalf("%d releases while idle after the release, want still 1", releases)
	}
	step(1<<20, idleBurst>>20-1) // a burst under idleBurst
	step(0, 10)
	if releases != 1 {
		t.Fatalf("%d releases after a small burst, want still 1", releases)
	}
	step(1<<20, 2) // together over idleBurst since the last release
	step(0, idleQuietTicks-1)
	if releases != 1 {
		t.Fatal("released before idleQuietTicks quiet ticks")
	}
	step(0, 1)
	if releases != 2 {
		t.Fatalf("%d releases after the second burst, want 2", releases)
	}
}

// TestIdleReleaserBinary: once quiet, the binary's pages alone are
// released when they grew since the last release, once per quiet spell,
// and never while work goes on; a burst releases both as before.
func TestIdleReleaserBinary(t *testing.T) {
	var allocs uint64
	grown, checks, releases, binReleases := false, 0, 0, 0
	r := &idleReleaser{
		allocs:        func() uint64 { return allocs },
		release:       func() { releases++; grown = false },
		binaryGrown:   func() bool { checks++; return grown },
		releaseBinary: func() { binReleases++; grown = false },
	}
	step := func(n uint64, ticks int) {
		for range ticks {
			allocs += n
			r.tick()
		}
	}
	want := func(when string, c, rel, bin int) {
		t.Helper()
		if checks != c || releases != rel || binReleases != bin {
			t.Fatalf("%s: %d checks, %d releases, %d of the binary alone; want %d, %d, %d",
				when, checks, releases, binReleases, c, rel, bin)
		}
	}
	grown = true
	step(1<<18, 10)
	want("busy, grown", 0, 0, 0)
	step(0, idleQuietTicks)
	want("quiet after work, grown", 1, 0, 1)
	step(0, 20)
	want("still quiet: not read again", 1, 0, 1)
	step(1<<18, 1)
	step(0, idleQuietTicks+5)
	want("quiet again after a little work, not grown", 2, 0, 1)
	grown = true
	step(0, 5)
	want("grown in a quiet spell already read", 2, 0, 1)
	step(1<<18, 1)
	step(0, idleQuietTicks)
	want("quiet after the next work", 3, 0, 2)
	grown = true
	step(1<<20, idleBurst>>20)
	want("a burst", 3, 0, 2)
	step(0, idleQuietTicks)
	want("quiet after the burst: heap and binary", 3, 1, 2)
}
