// Package gctune keeps a sidecar's memory small: the collector's target
// follows the live heap (Tune), and after start-up and when the process
// goes idle, garbage is returned to the OS and the pages of the binary are
// dropped from the resident set (releaseBinaryPages).
package gctune
