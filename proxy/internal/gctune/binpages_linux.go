package gctune

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// releaseBinaryPages drops the resident pages of the executable's
// read-only mappings (its code, read-only data and function tables) from
// the process's resident set, and returns how many bytes were resident in
// them. Package initialisation and start-up run code from nearly every
// part of the binary, and the kernel maps the pages around each one it
// faults in, so a started switchboard holds most of its binary resident;
// a call runs far less of it. The pages stay in the page cache, shared and
// clean, and the next touch maps one back (a minor fault); the kernel can
// reclaim what nobody maps without writing it anywhere. Only private,
// unwritable mappings that hold no page of the process's own are touched
// (binaryPages), so nothing is lost.
func releaseBinaryPages() uint64 {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0
	}
	pc, _, _, ok := runtime.Caller(0)
	if !ok {
		return 0
	}
	var released uint64
	for _, m := range binaryPages(parseSmaps(data), uint64(pc)) {
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), syscall.MADV_DONTNEED)
		if errno == 0 {
			released += m.rss
		}
	}
	return released
}

// binaryResident is how much of the process's memory backed by files is
// resident, in bytes: the binary's pages, the only file switchboard maps.
// It reads /proc/self/statm (its third field, in pages), which is far
// cheaper than smaps; 0 if that fails.
func binaryResident() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return 0
	}
	pages, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
