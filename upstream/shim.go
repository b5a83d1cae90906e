package upstream

import (
	"runtime/debug"
)

// ShimCommand is the hidden subcommand of the switchboard binary that runs
// one stdio server under a shim (see RunShim). It is not part of the CLI's
// documented surface; its arguments are switchboard's PID, the server's
// path and the server's arguments.
const ShimCommand = "upstream-shim"

// shimMain is the main package whose binary answers ShimCommand. Only that
// binary is re-executed as a shim: a test binary or another program that
// embeds this package would run its own main instead. Tests that dispatch
// ShimCommand in their TestMain turn the shim on through export_test.go.
const shimMain = "github.com/mcp-switchboard/switchboard/cmd/switchboard"

// shimOn reports whether stdio children start under a shim: on Linux, in
// the switchboard binary.
var shimOn = shimSupported && runsShimMain()

func runsShimMain() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && bi.Path == shimMain
}
