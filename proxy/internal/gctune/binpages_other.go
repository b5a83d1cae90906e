//go:build !linux

package gctune

// releaseBinaryPages does nothing where /proc/self/smaps does not say
// which pages are the executable's.
func releaseBinaryPages() uint64 { return 0 }

// binaryResident is 0 where there is no /proc/self/statm.
func binaryResident() uint64 { return 0 }
