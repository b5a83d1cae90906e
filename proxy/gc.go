package proxy

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// DefaultGOGC is the collector's target when the GOGC environment variable
// is unset and the live heap is small. Every message through the go-sdk
// allocates a fresh 32 KiB decode buffer and almost none of it survives the
// call, so with Go's default of 100 the collector runs every few calls and
// takes about a third of the CPU of a forwarded call (docs/performance.md).
const DefaultGOGC = 400

// gcHeadroom caps what the raised target may let the heap grow above the
// live heap. A sidecar's live heap is a few MiB, so it runs at DefaultGOGC;
// a gateway holding thousands of sessions has a large live heap, and its
// target falls towards Go's 100 instead of multiplying its memory.
const gcHeadroom = 64 << 20

// gcTunePeriod is how often the live heap is sampled.
const gcTunePeriod = 500 * time.Millisecond

// gcPercentFor is the GOGC for a live heap of live bytes: DefaultGOGC while
// the headroom it gives stays under gcHeadroom, less above, never below 100.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return DefaultGOGC
	}
	return int(max(100, min(DefaultGOGC, uint64(gcHeadroom)*100/live)))
}

// tuneGC keeps the collector's target at gcPercentFor(live heap) until ctx
// ends, unless the operator set GOGC, which always wins. GOMEMLIMIT, when
// set, caps the heap as usual.
func tuneGC(ctx context.Context, getenv func(string) string) {
	if getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(DefaultGOGC)
	cur := DefaultGOGC
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	go func() {
		tick := time.NewTicker(gcTunePeriod)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return
			}
			if pct := gcPercentFor(sample[0].Value.Uint64()); pct != cur {
				debug.SetGCPercent(pct)
				cur = pct
			}
		}
	}()
}

// gcSettings describes the collector's settings for the start-up log line.
func gcSettings() (gogc, memlimit string) {
	pct := debug.SetGCPercent(-1)
	debug.SetGCPercent(pct)
	gogc = strconv.Itoa(pct)
	if pct < 0 {
		gogc = "off"
	}
	memlimit = "none"
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		memlimit = strconv.FormatInt(l>>20, 10) + "MiB"
	}
	return gogc, memlimit
}

// releaseStartupMemory returns start-up garbage (config parsing, package
// initialisation, the first catalogs) to the OS once every upstream has had
// its first start attempt, so an idle sidecar holds only what it uses.
func releaseStartupMemory(ctx context.Context, hs []*upstream.Handle) {
	waitFirstAttempts(ctx, hs)
	if ctx.Err() == nil {
		debug.FreeOSMemory()
	}
}
