package gctune

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"time"
)

// DefaultGOGC is the collector's target when the GOGC environment variable
// is unset and the live heap is small. A forwarded call allocates about
// 10 KB and keeps none of it, and 2-3 MB stay live (about half of it what
// package initialisation made), so at Go's default of 100 the collector
// runs every 250-300 calls, for 1.5-2 ms each time: 4-18 % more CPU per
// call than at 400 in the benchmark's runs, for a peak about 11 MiB lower
// (docs/performance.md, *Where it stands*).
const DefaultGOGC = 400

// gcHeadroom caps what the raised target may let the heap grow above the
// live heap. A sidecar's live heap is a few MiB, so it runs at DefaultGOGC;
// a gateway holding thousands of sessions has a large live heap, and its
// target falls towards Go's 100 instead of multiplying its memory.
const gcHeadroom = 16 << 20

// gcPercentFor is the GOGC for a live heap of live bytes: DefaultGOGC while
// the headroom it gives stays under gcHeadroom, less above, never below 100.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return DefaultGOGC
	}
	return int(max(100, min(DefaultGOGC, uint64(gcHeadroom)*100/live)))
}

// startupGOGC is the collector's target while serve starts, until
// ReleaseStartupMemory: Go's own. Start-up makes garbage fast and keeps
// little (config, catalogs, views built again as each server comes up), and
// at DefaultGOGC the heap grows to 16 MiB before the first collection:
// with ten servers the start-up peak was 35 MiB, 30 at 100, for 10 to
// 20 ms more CPU.
const startupGOGC = 100

// Tune keeps the collector's target at startupGOGC until start-up is over
// (ReleaseStartupMemory), then at gcPercentFor(live heap), updated after
// every collection, until ctx ends, unless the operator set GOGC, which
// always wins. GOMEMLIMIT, when set, caps the heap as usual.
func Tune(ctx context.Context, getenv func(string) string) {
	if getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(startupGOGC)
	t := &gcTuner{ctx: ctx, cur: startupGOGC, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	tuner.Store(t)
	t.arm()
}

// tuner is the process's gcTuner, once Tune made one: the collector's
// target is the process's.
var tuner atomic.Pointer[gcTuner]

// gcTuner re-derives GOGC once per collection: a sentinel object is made
// unreachable at once, so its cleanup runs after the next collection, reads
// the live heap that collection left, and arms a new sentinel.
type gcTuner struct {
	ctx     context.Context
	started atomic.Bool      // start-up is over: the target follows the heap
	cur     int              // only the cleanup goroutine touches it after arm
	sample  []metrics.Sample // likewise
}

// gcSentinel is large enough not to be batched by the tiny allocator, whose
// objects may never be collected individually.
type gcSentinel [4]uint64

func (t *gcTuner) arm() {
	runtime.AddCleanup(new(gcSentinel), func(t *gcTuner) { t.collected() }, t)
}

func (t *gcTuner) collected() {
	if t.ctx.Err() != nil {
		return
	}
	if t.started.Load() {
		metrics.Read(t.sample)
		if t.sample[0].Value.Kind() == metrics.KindUint64 {
			if pct := gcPercentFor(t.sample[0].Value.Uint64()); pct != t.cur {
				debug.SetGCPercent(pct)
				t.cur = pct
			}
		}
	}
	t.arm()
}

// Settings describes the collector's settings for the start-up log line:
// with Tune's, the target it keeps once start-up is over.
func Settings() (gogc, memlimit string) {
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(sample)
	gogc, memlimit = "off", "none"
	if pct := sample[0].Value.Uint64(); pct != math.MaxUint64 { // GOGC=off reads as -1
		gogc = strconv.FormatUint(pct, 10)
	}
	if t := tuner.Load(); t != nil && !t.started.Load() {
		gogc = strconv.Itoa(DefaultGOGC)
	}
	if l := sample[1].Value.Uint64(); l != math.MaxInt64 {
		memlimit = strconv.FormatUint(l>>20, 10) + "MiB"
	}
	return gogc, memlimit
}

// ReleaseInitMemory releases the pages of the binary that package
// initialisation ran (releaseBinaryPages), before serve starts: nearly every
// linked package's init touches its code and tables, most of them never
// again, and what start-up runs next maps back only what it uses. With ten
// servers it took the start-up peak from 39 to 35 MiB.
func ReleaseInitMemory() { releaseBinary() }

// ReleaseStartupMemory ends start-up once started returns (every upstream
// has had its first start attempt): the collector's target leaves
// startupGOGC for the tuned one (Tune), start-up garbage (config parsing,
// the first catalogs and views) goes back to the OS, and the pages of the
// binary that start-up ran are released (releaseBinaryPages), so an idle
// sidecar holds only what it uses.
func ReleaseStartupMemory(ctx context.Context, started func(context.Context)) {
	started(ctx)
	if ctx.Err() != nil {
		return
	}
	if t := tuner.Load(); t != nil {
		// The collection release forces is the one after which the
		// target is tuned.
		t.started.Store(true)
	}
	release()
}

// release returns free heap pages to the OS and drops the binary's
// resident pages.
func release() {
	debug.FreeOSMemory()
	releaseBinary()
}

// releaseBinary drops the binary's resident pages and notes how much of it
// is resident right after: the little that reading smaps and returning
// from the release mapped back.
func releaseBinary() {
	releaseBinaryPages()
	binaryAfterRelease.Store(binaryResident())
}

// binaryAfterRelease is binaryResident just after the last release of the
// binary's pages, by start-up's or by the idle releaser.
var binaryAfterRelease atomic.Uint64

// binaryGrown reports whether the binary's resident pages grew by
// idleBinaryGrowth or more since the last release.
func binaryGrown() bool {
	return binaryResident() >= binaryAfterRelease.Load()+idleBinaryGrowth
}

// An idle process keeps what its last burst of work left (sessions opened,
// calls made) until the collector runs, which at DefaultGOGC may be never
// while it stays idle (Go forces a collection every two minutes), and the
// runtime hands freed pages back to the OS slowly. ReleaseWhenIdle
// collects and returns them once allocation has all but stopped after a
// burst.
//
// Work that allocates little can still map much of the binary back: what
// follows start-up (a server's first notifications and requests, the
// first catalogs' schemas) ran code from 8 MiB of it that stayed resident
// while idle, with server-everything, and the first calls after it added
// their own pages to those. Once quiet, the binary's pages are released
// again when they grew by idleBinaryGrowth since the last release.
const (
	idleTick         = 500 * time.Millisecond
	idleQuietTicks   = 2        // ticks in a row with at most idleAllocs allocated
	idleAllocs       = 64 << 10 // per tick: the sweeps and timers of an idle process
	idleBurst        = 8 << 20  // allocated since the last release, for another
	idleBinaryGrowth = 2 << 20  // the binary's resident pages grown since the last release, for another
)

// idleReleaser decides, one tick at a time, when to release.
type idleReleaser struct {
	allocs        func() uint64 // bytes allocated so far
	release       func()        // the heap's free pages and the binary's
	binaryGrown   func() bool   // the binary's resident pages grew (binaryGrown)
	releaseBinary func()        // the binary's pages only
	last          uint64        // allocs at the last release
	prev          uint64        // allocs at the previous tick
	quiet         int           // ticks in a row with little allocated
}

func (r *idleReleaser) tick() {
	now := r.allocs()
	if now-r.prev <= idleAllocs {
		r.quiet++
	} else {
		r.quiet = 0
	}
	r.prev = now
	switch {
	case r.quiet < idleQuietTicks:
	case now-r.last >= idleBurst:
		r.release()
		r.last, r.quiet = now, 0
	case r.quiet == idleQuietTicks && r.binaryGrown():
		// Once per quiet spell: only work maps the binary back.
		r.releaseBinary()
	}
}

// ReleaseWhenIdle runs an idleReleaser until ctx ends.
func ReleaseWhenIdle(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocs := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	r := &idleReleaser{allocs: allocs, release: release, binaryGrown: binaryGrown, releaseBinary: releaseBinary}
	now := allocs()
	r.last, r.prev = now, now
	t := time.NewTicker(idleTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.tick()
		}
	}
}
