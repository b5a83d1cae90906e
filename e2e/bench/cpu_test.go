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
	done := make(chan struct{})
	spin := func() {
		x := 0
		for end := time.Now().Add(150 * time.Millisecond); time.Now().Before(end); {
			x++
		}
		_ = x
		done <- struct{}{}
	}
	go spin()
	go spin()
	<-done
	<-done
	ru1 := rusage()
	after, err := readCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	got, want := after-before, ru1-ru0
	if want < 100*time.Millisecond {
		t.Fatalf("rusage counted only %v of busy work", want)
	}
	// rusage is tick-sampled and scaled to the same run time; the two
	// agree to a few milliseconds over a 150 ms stretch.
	if diff := got - want; diff < -15*time.Millisecond || diff > 15*time.Millisecond {
		t.Errorf("schedstat sum %v, rusage %v", got, want)
	}
	stat0, err := readStatCPU(os.Getpid())
	if err != nil || stat0 <= 0 {
		t.Errorf("readStatCPU = %v, %v", stat0, err)
	}
}
