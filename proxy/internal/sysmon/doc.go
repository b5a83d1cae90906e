// Package sysmon decides how often the Go runtime's monitor thread wakes
// while serve runs.
//
// The runtime's monitor (sysmon) sleeps 20 µs between checks, and doubles
// the sleep up to 10 ms once a millisecond has passed with nothing for it
// to do. When every processor is idle it sleeps until woken, and a system
// call that wakes it puts it back to 20 µs. A relay goes idle and busy
// again thousands of times a second, between one call's answer and the
// next call's request, so with the runtime's default the monitor never
// backs off: it wakes 50,000 times a second, each wake a context switch,
// about a tenth of a forwarded call's CPU (golang/go#18236; the profiles
// in docs/performance.md).
//
// The runtime skips that deep sleep when GODEBUG sets schedtrace, a period
// at which it prints one line about its scheduler to standard error. serve
// therefore runs with schedtrace at the largest period the runtime reads,
// 2147483647 ms (24.8 days): the monitor then backs off as it does in a
// process that stays busy, and the line comes at most once per period. The
// runtime reads GODEBUG when the process starts, so the command re-executes
// itself with it (cmd/switchboard). A GODEBUG that names schedtrace itself
// (schedtrace=0: the runtime's default) is left as it is.
package sysmon
