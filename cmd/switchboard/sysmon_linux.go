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
// (nil) or the exec failed. /proc/self/exe is this binary even when its
// file was replaced or removed since it started.
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
	return syscall.Exec("/proc/self/exe", os.Args, append(env, "GODEBUG="+godebug))
}
