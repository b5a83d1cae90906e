package httpio

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

// TestReleaseEndsABlockedWrite: a stream writing to a client that does not
// read blocks once the connection's buffers are full; Release ends that
// write at once, not at its one-minute deadline.
//
// The connection's buffers are made small (64 KiB a side), far smaller
// than one chunk: the first write can never complete, so once it is under
// way it is the blocked write, with no pause to guess how long filling the
// buffers takes.
func TestReleaseEndsABlockedWrite(t *testing.T) {
	var (
		mu   sync.Mutex
		hold Hold
		w    http.ResponseWriter
	)
	writing := make(chan struct{})
	ended := make(chan error, 1)
	const bufSize, chunkSize = 64 << 10, 1 << 20
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hold.Use(rw)
		w = rw
		mu.Unlock()
		close(writing)
		chunk := make([]byte, chunkSize)
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
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && st == http.StateNew {
			_ = tc.SetWriteBuffer(bufSize)
		}
	}
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(bufSize)
		}
		return c, err
	}}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL) // its body is never read
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-writing
	// The first chunk is bigger than the buffers hold: once its write is
	// under way, it blocks.
	testutil.Eventually(t, 20*time.Second, "a write under way", hold.writing.Load)
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

// TestReleaseAfterWritesLeavesNoDeadline: a write's deadline is lifted
// when it returns, so a Release with no write under way sets none, and
// what net/http writes once the handler returns (the chunked ending) goes
// out even long after the last write's deadline.
func TestReleaseAfterWritesLeavesNoDeadline(t *testing.T) {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		var hold Hold
		mu.Lock()
		hold.Use(rw)
		w := rw
		for range 3 {
			if err := hold.WriteFlush(w, []byte("part\n"), 250*time.Millisecond); err != nil {
				t.Errorf("write: %v", err)
			}
		}
		mu.Unlock()
		hold.Release(&mu, func() { w = nil })
		time.Sleep(600 * time.Millisecond) // past every deadline the writes had
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "part\npart\npart\n" {
		t.Fatalf("body %q, %v: the response did not end cleanly", body, err)
	}
}

// TestWriteAfterEndingGivesUp: a write that begins once the stream is
// ending (detached, or Release began) gives up at once, whatever its
// timeout.
func TestWriteAfterEndingGivesUp(t *testing.T) {
	ended := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		var (
			mu   sync.Mutex
			hold Hold
		)
		mu.Lock()
		defer mu.Unlock()
		hold.Use(rw)
		hold.Detach()
		start := time.Now()
		err := hold.WriteFlush(rw, make([]byte, 8<<20), time.Minute)
		if d := time.Since(start); d > 5*time.Second {
			err = fmt.Errorf("gave up after %v", d)
		}
		ended <- err
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL) // its body is never read
	if err == nil {
		defer resp.Body.Close()
	}
	select {
	case err := <-ended:
		if err == nil || strings.HasPrefix(err.Error(), "gave up") {
			t.Fatalf("the write after the stream ended: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the write after the stream ended still blocks after 20 s")
	}
}
