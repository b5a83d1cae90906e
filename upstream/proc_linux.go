//go:build linux

package upstream

import "syscall"

// setDeathSignal makes the kernel kill the child if switchboard dies without
// stopping it. Pdeathsig fires when the forking OS thread exits, which is
// acceptable: the stop path normally runs first.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
