package main

import (
	"os"
	"strings"
	"syscall"

	"github.com/mcp-switchboard/switchboard/proxy"
)

// restartForSysmon starts serve again, in this process, with the GODEBUG
// that lets the runtime's monitor back off (proxy.SysmonEnv; the runtime
// reads GODEBUG only at start). It returns only when no restart is needed
// (nil) or the exec failed.
func restartForSysmon() error {
	godebug, restart := proxy.SysmonEnv(os.Getenv)
	if !restart {
		return nil
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	return syscall.Exec(selfPath(), os.Args, append(env, "GODEBUG="+godebug))
}

// selfPath is the path of this binary to exec. The kernel names a process
// after the file it execs, so the binary's own path keeps the name ps,
// top and pgrep show (exec'ing /proc/self/exe would rename the process
// "exe"). /proc/self/exe is the fallback, for a binary whose file was
// removed or replaced since it started: it is this binary all the same.
func selfPath() string {
	const self = "/proc/self/exe"
	p, err := os.Executable()
	if err != nil {
		return self
	}
	fi, err := os.Stat(p)
	if err != nil {
		return self
	}
	if me, err := os.Stat(self); err != nil || !os.SameFile(fi, me) {
		return self
	}
	return p
}
