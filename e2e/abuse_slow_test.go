package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// slowOutcome is how one slow connection ended.
type slowOutcome struct {
	open   time.Duration // from the end of the opening bytes until it ended
	closed bool          // the server closed it (rather than our deadline passing)
}

// slowClients opens n connections to addr; each writes head, then one byte
// of drip (cycling) every 100 ms, never finishing (no bytes at all with an
// empty drip). It returns how each ended, waiting at most limit.
func slowClients(t *testing.T, addr string, n int, head, drip string, limit time.Duration) []slowOutcome {
	t.Helper()
	out := make([]slowOutcome, n)
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { out[i] = holdSlow(c, head, drip, limit) })
	}
	wg.Wait()
	return out
}

// holdSlow plays one slow client on c until the server closes c or limit
// passes.
func holdSlow(c net.Conn, head, drip string, limit time.Duration) slowOutcome {
	defer c.Close()
	if _, err := io.WriteString(c, head); err != nil {
		return slowOutcome{closed: true}
	}
	start := time.Now()
	ended := make(chan bool, 1) // true: by the server
	go func() {
		_ = c.SetReadDeadline(start.Add(limit))
		_, err := io.Copy(io.Discard, c) // whatever answer comes, up to the close
		ended <- !errors.Is(err, os.ErrDeadlineExceeded)
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case byServer := <-ended:
			return slowOutcome{open: time.Since(start), closed: byServer}
		case <-tick.C:
			if drip != "" {
				_, _ = c.Write([]byte{drip[i%len(drip)]}) // fails once the server closed c
			}
		}
	}
}

// summary describes how slow connections ended: how many the server
// closed, and the quantiles of how long they stayed open.
func summary(out []slowOutcome) (closed int, desc string, longest time.Duration) {
	var d []time.Duration
	for _, o := range out {
		if o.closed {
			closed++
		}
		d = append(d, o.open)
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))].Round(time.Millisecond) }
	return closed, fmt.Sprintf("min %s, median %s, p90 %s, p99 %s, max %s", q(0), q(0.5), q(0.9), q(0.99), q(1)), d[len(d)-1]
}

// TestAbuseSlowloris: 300 connections that send their headers and then
// trickle the body a byte at a time, 300 that never finish their headers,
// and 300 that stop half-way through them, are each closed by the server
// within readTimeout (2 s here) plus a margin, on the MCP listener and on
// the admin listener alike; switchboard then still serves. See #17.
func TestAbuseSlowloris(t *testing.T) {
	const n = 300
	const readTimeout = 2 * time.Second
	// Generous: the machine is shared. A fresh-clone CI run, both e2e
	// shards under the race detector on two cores, saw every silent
	// connection of one case closed 6.3–9.9 s after its head while the
	// dripping ones of the case before closed at 1.9–2.0 s: a stall, not
	// the timeout. Without the defence a connection outlives the client's
	// limit below and counts as not closed by the server; serve's default
	// (30 s) would too.
	const margin = 8 * time.Second
	s := startSwitchboard(t, map[string]any{
		"logLevel":    "info",
		"readTimeout": readTimeout.Milliseconds(),
		"mcpServers":  map[string]any{"fx": fixtureServer("fx")},
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`
	slowBody := func(addr, method, path string) string {
		return fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n", method, path, addr)
	}
	slowHead := func(addr, method, path string) string {
		return fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nX-Slow: ", method, path, addr)
	}
	cases := []struct {
		name, addr, head, drip string
	}{
		{"mcp slow body", s.addr, slowBody(s.addr, "POST", "/mcp"), body},
		{"mcp headers never finish", s.addr, slowHead(s.addr, "POST", "/mcp"), "abcdefgh"},
		{"mcp headers stop", s.addr, slowHead(s.addr, "POST", "/mcp"), ""},
		{"admin slow body", s.admin, slowBody(s.admin, "POST", "/admin/reload"), body},
		{"admin headers never finish", s.admin, slowHead(s.admin, "GET", "/status"), "abcdefgh"},
	}
	for _, c := range cases {
		out := slowClients(t, c.addr, n, c.head, c.drip, readTimeout+margin+5*time.Second)
		closed, desc, longest := summary(out)
		t.Logf("%s: %d of %d closed by the server; open for %s (readTimeout %s)", c.name, closed, n, desc, readTimeout)
		if closed != n || longest > readTimeout+margin {
			t.Errorf("%s: %d of %d closed by the server, the last after %s; want all within %s", c.name, closed, n, longest, readTimeout+margin)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, status, err := newOpener(t, "http://"+s.addr+"/mcp", "", 1).open(ctx); err != nil {
		t.Errorf("a session after the slow connections: %d %v", status, err)
	}
}
