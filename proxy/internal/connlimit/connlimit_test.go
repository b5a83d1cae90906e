package connlimit_test

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/proxy/internal/connlimit"
)

func TestCap(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit uint64
		want  int
	}{
		{"small limit keeps the minimum reserve", 256, 256 - connlimit.MinReserve},
		{"common default keeps a quarter", 1024, 768},
		{"container default", 1 << 20, 3 << 18},
		{"limit below the reserve still takes one", 32, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := connlimit.Cap(c.limit); got != c.want {
				t.Errorf("Cap(%d) = %d, want %d", c.limit, got, c.want)
			}
		})
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestListenerWaitsAtCap: at the cap, a third connection waits in the
// accept queue (with one WARN) and is accepted once one of the two open
// closes.
func TestListenerWaitsAtCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	l := connlimit.New(inner, 2, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	defer l.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains([]byte(logs.String()), []byte("at the cap")) {
		if time.Now().After(deadline) {
			t.Fatal("no WARN at the cap")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := l.Status(); st != (connlimit.Status{Open: 2, Max: 2}) {
		t.Fatalf("Status() = %+v at the cap, want 2 open of 2", st)
	}
	select {
	case c := <-accepted:
		t.Fatalf("a third connection was accepted at the cap: %v", c.RemoteAddr())
	default:
	}
	first.Close()
	first.Close() // a second Close gives back no second slot
	third := <-accepted
	if st := l.Status(); st != (connlimit.Status{Open: 2, Max: 2}) {
		t.Errorf("Status() = %+v after one closed and one more was accepted, want 2 open", st)
	}
	second.Close()
	third.Close()
	if st := l.Status(); st.Open != 0 {
		t.Errorf("Status() = %+v after every connection closed, want 0 open", st)
	}
	l.Close()
	if _, ok := <-accepted; ok {
		t.Error("Accept returned a connection after Close")
	}
}
