//go:build windows

package connlimit

// FileLimit is 0 on Windows: it has no descriptor limit of the kind, and
// downstream connections are not capped.
func FileLimit() uint64 { return 0 }
