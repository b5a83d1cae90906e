//go:build unix

package instance

import (
	"errors"
	"syscall"
)

// alive reports whether a process with this PID exists (signal 0 checks
// without sending anything; EPERM means it exists under another user).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
