package httpio

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestReleaseEndsABlockedWrite: a stream writing to a client that does not
// read blocks once the connection's buffers are full; Release ends that
// write at once, not at its one-minute deadline.
func TestReleaseEndsABlockedWrite(t *testing.T) {
	var (
		mu   sync.Mutex
		hold Hold
		w    http.ResponseWriter
	)
	writing := make(chan struct{})
	ended := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hold.Use(rw)
		w = rw
		mu.Unlock()
		close(writing)
		chunk := make([]byte, 1<<20)
		for {
			mu.Lock()
			if w == nil {
				mu.Unlock()
				ended <- nil
				return
			}
			err := hold.WriteFlush(w, chunk, time.Minute)
			mu.Unlock()
			if err != nil {
				ended <- err
				return
			}
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL) // its body is never read
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-writing
	time.Sleep(200 * time.Millisecond) // the buffers fill; the write blocks
	released := time.Now()
	go hold.Release(&mu, func() { w = nil })
	select {
	case <-ended:
		if d := time.Since(released); d > 5*time.Second {
			t.Errorf("the write ended %v after the release", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the write still blocks 20 s after the release (its deadline is a minute)")
	}
}
