//go:build windows

package upstream

import (
	"io"
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr has nothing to add on Windows: process groups are not signalled
// there, and the SDK's close kills the direct child.
func setProcAttr(*exec.Cmd) {}

func terminateGroup(int) {}

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func reapGroupChildren(int) {}

func growPipe(io.Reader) {}

// signalPID is only used for a shim's server, and there is no shim on
// Windows.
func signalPID(int, syscall.Signal) error { return syscall.EWINDOWS }
