//go:build unix

package upstream

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// setProcAttr starts the child in its own process group, so the group can be
// signalled as a whole.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

func terminateGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGTERM) }

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// reapGroupChildren waits for the members of process group pgid that are
// our own children, after killGroup. Normally there are none: the direct
// child was reaped by the SDK's close, and grandchildren are reparented to
// init. When switchboard is PID 1 (a container entrypoint), orphaned
// grandchildren are reparented to it, and without this they would stay
// zombies. It gives up after a second.
func reapGroupChildren(pgid int) {
	deadline := time.Now().Add(time.Second)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil: // ECHILD: none of our children is in the group
			return
		case pid > 0:
			continue
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
