// Package gctune keeps a sidecar's memory small: the collector's target
// follows the live heap (Tune), and garbage is returned to the OS after
// start-up and when the process goes idle.
package gctune
