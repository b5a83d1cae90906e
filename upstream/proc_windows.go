//go:build windows

package upstream

import (
	"os"
	"os/exec"
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
