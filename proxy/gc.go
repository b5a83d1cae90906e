package proxy

import (
	"context"
	"math"
	"runtime/debug"
	"strconv"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// DefaultGOGC is the collector's target when the GOGC environment variable
// is unset. Every message through the go-sdk allocates a fresh 32 KiB decode
// buffer and almost none of it survives the call, so with Go's default of
// 100 the collector runs every few calls and takes a third of the CPU of a
// forwarded call (docs/performance.md). The live heap is small, so a higher
// target costs little memory; GOMEMLIMIT, when set, caps the heap as usual.
const DefaultGOGC = 400

// tuneGC applies DefaultGOGC unless the operator set GOGC.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGOGC)
	}
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
