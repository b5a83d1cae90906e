//go:build unix

package connlimit

import "syscall"

// FileLimit is the process's soft RLIMIT_NOFILE (the runtime raises it to
// the hard limit at start where it may), or 0 if it cannot be read or is
// unlimited.
func FileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == ^uint64(0) {
		return 0
	}
	return rl.Cur
}
