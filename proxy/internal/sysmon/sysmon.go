package sysmon

import (
	"strconv"
	"strings"
)

// Period is the schedtrace period serve runs with, in milliseconds: the
// largest the runtime reads (a 32-bit integer).
const Period = "2147483647"

// Env returns the GODEBUG value to run serve with, and whether the process
// must be started again with it: false when getenv("GODEBUG") already
// names schedtrace, whatever its value.
func Env(getenv func(string) string) (godebug string, restart bool) {
	cur := getenv("GODEBUG")
	if _, named := schedtrace(cur); named {
		return cur, false
	}
	if cur == "" {
		return "schedtrace=" + Period, true
	}
	return cur + ",schedtrace=" + Period, true
}

// Mode names the monitor's behaviour for the start-up line: "backoff" when
// GODEBUG sets schedtrace above zero, else "default".
func Mode(getenv func(string) string) string {
	if ms, _ := schedtrace(getenv("GODEBUG")); ms > 0 {
		return "backoff"
	}
	return "default"
}

// schedtrace returns the schedtrace period GODEBUG sets, as the runtime
// reads it at start-up (left to right, the last valid setting wins), and
// whether GODEBUG names schedtrace at all.
func schedtrace(godebug string) (ms int32, named bool) {
	for field := range strings.SplitSeq(godebug, ",") {
		key, value, ok := strings.Cut(field, "=")
		if !ok || key != "schedtrace" {
			continue
		}
		named = true
		if n, err := strconv.ParseInt(value, 10, 32); err == nil {
			ms = int32(n)
		}
	}
	return ms, named
}
