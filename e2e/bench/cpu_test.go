package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestReadCPU holds the schedstat sum to the kernel's rusage of this
// process over a stretch of busy work on two goroutines.
func TestReadCPU(t *testing.T) {
	if !haveSchedstat {
		t.Skip("no schedstat here")
	}
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before, err := readCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ru0 := rusage()
	// Each goroutine spins until the process has used busyCPU, however
	// long that takes on a loaded machine: a stretch of wall time would
	// buy less CPU the busier the machine is.
	const busyCPU = 300 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	done := make(chan bool)
	spin := func() {
		x := 0
		for rusage()-ru0 < busyCPU && time.Now().Before(deadline) {
			for range 100_000 {
				x++
			}
		}
		_ = x
		done <- time.Now().Before(deadline)
	}
	go spin()
	go spin()
	if !<-done || !<-done {
		t.Fatalf("the process did not get %v of CPU in 30 s", busyCPU)
	}
	ru1 := rusage()
	after, err := readCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	got, want := after-before, ru1-ru0
	if want < busyCPU {
		t.Fatalf("rusage counted only %v of busy work", want)
	}
	// rusage is tick-sampled and scaled to the same run time; the two
	// agree to a few milliseconds over this stretch.
	if diff := got - want; diff < -15*time.Millisecond || diff > 15*time.Millisecond {
		t.Errorf("schedstat sum %v, rusage %v", got, want)
	}
	stat0, err := readStatCPU(os.Getpid())
	if err != nil || stat0 <= 0 {
		t.Errorf("readStatCPU = %v, %v", stat0, err)
	}
}
