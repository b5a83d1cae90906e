package gctune

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// fileResident is the test process's resident memory backed by files, in
// bytes, from /proc/self/smaps_rollup.
func fileResident(t *testing.T) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("no smaps_rollup: %v", err)
	}
	var rss, anon uint64
	for _, line := range strings.Split(string(data), "\n") {
		name, value, _ := strings.Cut(line, ":")
		switch name {
		case "Rss":
			rss, _ = parseKB(value)
		case "Anonymous":
			anon, _ = parseKB(value)
		}
	}
	return rss - anon
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
