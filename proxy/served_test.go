package proxy

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

// TestServedDrain pins the generation count: a replaced generation drains
// only when its last request released it, and swap hands back every
// replaced generation still in use, older ones included.
func TestServedDrain(t *testing.T) {
	p := &Proxy{}
	g1 := newServed(nil, nil, access{})
	p.serving.Store(g1)
	r1 := p.acquire()
	if r1 != g1 {
		t.Fatal("acquire did not return the current generation")
	}
	g2 := newServed(nil, nil, access{})
	if waits := p.swap(g2); len(waits) != 1 || waits[0] != g1 {
		t.Fatalf("swap returned %v, want [g1]", waits)
	}
	if isClosed(g1.drained) {
		t.Fatal("g1 drained with a request still using it")
	}
	r2 := p.acquire()
	g3 := newServed(nil, nil, access{})
	if waits := p.swap(g3); len(waits) != 2 {
		t.Fatalf("swap returned %d generations, want g1 and g2", len(waits))
	}
	r2.release()
	if !isClosed(g2.drained) {
		t.Error("g2 not drained after its only request released it")
	}
	r1.release()
	if !isClosed(g1.drained) {
		t.Error("g1 not drained after its only request released it")
	}
	if waits := p.swap(newServed(nil, nil, access{})); len(waits) != 0 {
		t.Errorf("swap returned %d generations no request uses", len(waits))
	}
	if !isClosed(g3.drained) {
		t.Error("an unused generation did not drain on retire")
	}
}

// TestServedNeverDrainedInUse races requests against swaps: no request
// ever holds a generation that already drained.
func TestServedNeverDrainedInUse(t *testing.T) {
	p := &Proxy{}
	p.serving.Store(newServed(nil, nil, access{}))
	var (
		stop atomic.Bool
		bad  atomic.Int64
		wg   sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				s := p.acquire()
				if isClosed(s.drained) {
					bad.Add(1)
				}
				s.release()
			}
		})
	}
	for range 20000 {
		p.pubMu.Lock()
		p.swap(newServed(nil, nil, access{}))
		p.pubMu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Errorf("%d requests held a drained generation", n)
	}
	p.pubMu.Lock()
	waits := p.swap(newServed(nil, nil, access{}))
	p.pubMu.Unlock()
	if len(waits) != 0 {
		t.Errorf("%d generations never drained after every request released them", len(waits))
	}
}
