//go:build linux

package upstream

import (
	"io"
	"syscall"
)

// setDeathSignal makes the kernel kill the child if switchboard dies without
// stopping it. Pdeathsig fires when the forking OS thread exits, which is
// acceptable: the stop path normally runs first.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

const fSetPipeSize = 1031 // F_SETPIPE_SZ

// growPipe enlarges the pipe r reads from to stderrFloodBufferSize, if r is a pipe and the
// kernel allows it, so that a child flooding it blocks less while its lines
// are read in bulk.
func growPipe(r io.Reader) {
	sc, ok := r.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, stderrFloodBufferSize)
	})
}
