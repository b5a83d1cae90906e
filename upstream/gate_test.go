package upstream

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestGateDrainsOnTheLastLeave races close against the calls leaving and
// against calls trying to enter. drained must close once every call that
// got in has left, and not before. It runs in a synctest bubble: a lost
// wake-up leaves the bubble blocked on drained, which synctest reports as
// a deadlock instead of a timeout.
func TestGateDrainsOnTheLastLeave(t *testing.T) {
	for range 500 {
		synctest.Test(t, func(t *testing.T) {
			var g gate
			const inFlight, late = 8, 8
			for range inFlight {
				if !g.enter() {
					t.Fatal("an open gate refused a call")
				}
			}
			var left atomic.Int64 // calls that were in and are leaving
			var wg sync.WaitGroup
			for range inFlight {
				wg.Go(func() {
					left.Add(1)
					g.leave()
				})
			}
			for range late {
				wg.Go(func() {
					if g.enter() {
						left.Add(1)
						g.leave()
					}
				})
			}
			drained := g.close()
			<-drained
			if n := g.inFlight(); n != 0 {
				t.Fatalf("drained with %d calls in flight", n)
			}
			if n := left.Load(); n < inFlight {
				t.Fatalf("drained after %d of %d calls left", n, inFlight)
			}
			wg.Wait()
			if g.enter() {
				t.Fatal("a closed gate let a call in")
			}
			if again := g.close(); again != drained {
				t.Fatal("a second close returned another channel")
			}
		})
	}
}

// TestGateCloseWithNoneInFlight: an empty gate is drained at once.
func TestGateCloseWithNoneInFlight(t *testing.T) {
	var g gate
	select {
	case <-g.close():
	default:
		t.Fatal("an empty gate is not drained")
	}
}

// TestGateIdleStop: the idle stop happens only with no call in flight and
// none for the idle timeout, and a call that enters afterwards sees what
// it withdrew.
func TestGateIdleStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g gate
		g.touch()
		withdrawn := false
		withdraw := func() { withdrawn = true }
		time.Sleep(time.Second - time.Nanosecond)
		if g.stopIfIdle(time.Second, withdraw) || withdrawn {
			t.Fatal("stopped before the idle timeout")
		}
		if got := g.idleIn(time.Second); got != time.Nanosecond {
			t.Errorf("idle in %s, want 1ns", got)
		}
		g.enter()
		time.Sleep(time.Minute)
		if g.stopIfIdle(time.Second, withdraw) || withdrawn {
			t.Fatal("stopped with a call in flight")
		}
		if got := g.idleIn(time.Second); got != time.Second {
			t.Errorf("idle in %s with a call in flight, want the whole timeout", got)
		}
		g.leave()
		time.Sleep(time.Second)
		if !g.stopIfIdle(time.Second, withdraw) || !withdrawn {
			t.Fatal("not stopped a timeout after the last call")
		}
	})
}
