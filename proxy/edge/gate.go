package edge

import (
	"context"
	"sync"
)

// requestGate counts downstream requests in flight for graceful shutdown. A
// bare sync.WaitGroup does not do: an Add from zero must happen before Wait,
// and HTTP handlers start whenever a request arrives. The gate orders every
// enter before drain, after which new requests are refused.
type requestGate struct {
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
}

// enter admits one request, or reports false once drain began.
func (g *requestGate) enter() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// leave ends a request that enter admitted.
func (g *requestGate) leave() { g.wg.Done() }

// drain refuses new requests and waits for those in flight until ctx is
// done. It may be called more than once.
func (g *requestGate) drain(ctx context.Context) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	waitGroup(ctx, &g.wg)
}

// waitGroup waits for wg until ctx is done.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
