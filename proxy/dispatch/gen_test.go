package dispatch

import (
	"sync"
	"sync/atomic"
	"testing"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestGenDrain pins the generation count: a replaced generation drains
// only when its last request released it, and swap hands back every
// replaced generation still in use, older ones included.
func TestGenDrain(t *testing.T) {
	g1 := NewGen(nil, nil, Access{}, Observers{})
	p := NewServing(g1)
	r1 := p.Acquire()
	if r1 != g1 {
		t.Fatal("acquire did not return the current generation")
	}
	g2 := NewGen(nil, nil, Access{}, Observers{})
	if waits := p.Swap(g2); len(waits) != 1 || waits[0] != g1 {
		t.Fatalf("swap returned %v, want [g1]", waits)
	}
	if isClosed(g1.drained) {
		t.Fatal("g1 drained with a request still using it")
	}
	r2 := p.Acquire()
	g3 := NewGen(nil, nil, Access{}, Observers{})
	if waits := p.Swap(g3); len(waits) != 2 {
		t.Fatalf("swap returned %d generations, want g1 and g2", len(waits))
	}
	r2.Release()
	if !isClosed(g2.drained) {
		t.Error("g2 not drained after its only request released it")
	}
	r1.Release()
	if !isClosed(g1.drained) {
		t.Error("g1 not drained after its only request released it")
	}
	if waits := p.Swap(NewGen(nil, nil, Access{}, Observers{})); len(waits) != 0 {
		t.Errorf("swap returned %d generations no request uses", len(waits))
	}
	if !isClosed(g3.drained) {
		t.Error("an unused generation did not drain on retire")
	}
}

// TestGenNeverDrainedInUse races requests against swaps: no request
// ever holds a generation that already drained.
func TestGenNeverDrainedInUse(t *testing.T) {
	p := NewServing(NewGen(nil, nil, Access{}, Observers{}))
	var (
		stop atomic.Bool
		bad  atomic.Int64
		wg   sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				s := p.Acquire()
				if isClosed(s.drained) {
					bad.Add(1)
				}
				s.Release()
			}
		})
	}
	for range 20000 {
		p.Swap(NewGen(nil, nil, Access{}, Observers{}))
	}
	stop.Store(true)
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Errorf("%d requests held a drained generation", n)
	}
	waits := p.Swap(NewGen(nil, nil, Access{}, Observers{}))
	if len(waits) != 0 {
		t.Errorf("%d generations never drained after every request released them", len(waits))
	}
}
