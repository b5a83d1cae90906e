//go:build !linux

package main

// restartForSysmon does nothing off Linux: serve keeps the runtime's
// default monitor there.
func restartForSysmon() error { return nil }
