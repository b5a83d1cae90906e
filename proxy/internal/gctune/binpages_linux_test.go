package gctune

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// fileResident is the test process's resident memory backed by files, in
// bytes, from /proc/self/status.
func fileResident(t *testing.T) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			if n, ok := parseKB(v); ok {
				return n
			}
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestReleaseBinaryPages releases this test binary's pages and goes on
// running: its resident file-backed memory falls, by at least a quarter of
// what was released once the reads of smaps have mapped their own code
// back, and the code it runs next is mapped back.
func TestReleaseBinaryPages(t *testing.T) {
	before := fileResident(t)
	released := releaseBinaryPages()
	after := fileResident(t)
	if released < 1<<20 {
		t.Fatalf("released %d KiB of the binary; a Go test binary has MiBs resident", released>>10)
	}
	if after+released/4 > before {
		t.Errorf("file-backed resident %d KiB before, %d KiB after releasing %d KiB", before>>10, after>>10, released>>10)
	}
	// The released code runs again.
	var b strings.Builder
	for i := range 1000 {
		b.WriteString(strings.Repeat("x", i%7))
	}
	runtime.GC()
	if b.Len() == 0 {
		t.Fatal("no output")
	}
	t.Logf("file-backed resident %d KiB before, %d KiB after; released %d KiB", before>>10, after>>10, released>>10)
}
