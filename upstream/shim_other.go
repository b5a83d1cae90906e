//go:build !linux

package upstream

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Without Pdeathsig and child subreapers there is no shim: on macOS, the BSDs
// and Windows a child whose switchboard was killed with SIGKILL (or
// TerminateProcess) lives on, with its own children, until stdin EOF makes
// it exit, as an MCP stdio server should.
const shimSupported = false

func shimCommand(string, []string) *exec.Cmd { return nil }

func startShim(*exec.Cmd) (int, error) { return 0, errors.New("shim: not supported") }

// RunShim is only available on Linux.
func RunShim([]string) int {
	fmt.Fprintln(os.Stderr, "switchboard: the upstream shim runs on Linux only")
	return 2
}
