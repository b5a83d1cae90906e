// Package gctune keeps a sidecar's memory small: the collector's target is
// Go's own while serve starts and then follows the live heap (Tune); the
// pages of the binary that package initialisation ran are dropped from the
// resident set before serve starts (ReleaseInitMemory), and after start-up
// and when the process goes idle after a burst, garbage is returned to the
// OS and the pages of the binary are dropped again (releaseBinaryPages);
// once quiet after work that allocated little, the binary's pages alone,
// when they grew since the last release (idleReleaser).
package gctune
