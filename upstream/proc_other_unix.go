//go:build unix && !linux

package upstream

import (
	"io"
	"syscall"
)

func setDeathSignal(*syscall.SysProcAttr) {}

func growPipe(io.Reader) {}
