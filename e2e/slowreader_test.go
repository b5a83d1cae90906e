package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestClientThatNeverReads: one session opens its standalone stream and
// never reads it while an upstream sends ~100 MB of log messages outside
// any call. switchboard must stay bounded, close that session with a logged
// reason, and serve another session as it does when the same flood goes to
// a client that reads: its list_changed arrives, its calls' p50 stays
// within 2×. The same flood runs twice to the go-sdk client and one raw
// client each time: first one that reads its stream (the reference: the
// flood itself costs CPU and collector headroom), then one that never
// reads; the second flood may add ≤ 16 MiB of RSS.
func TestClientThatNeverReads(t *testing.T) {
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, map[string]any{
		"logLevel": "info",
		"mcpServers": map[string]any{
			"flood": fixtureServer("flood"),
			"echo":  fixtureServer("echo"),
		},
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	// The well-behaved client: takes every log message, counts list changes.
	f := &flood{s: s}
	f.good = s.client(t, &mcp.ClientOptions{
		LoggingMessageHandler:  func(context.Context, *mcp.LoggingMessageRequest) { f.logs.Add(1) },
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { f.changes.Add(1) },
	})
	waitListed(t, f.good, "mcp_flood_log_burst", "mcp_echo_echo", "mcp_echo_add_tool")
	if err := f.good.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	idle := callP50(t, f.good, 200)
	before := rssKiB(t, s.proc.cmd.Process.Pid)
	// The reference flood has one more session that reads its stream, so
	// that both floods go to as many sessions: what differs is only that
	// one of them stops reading.
	reader := newRawHTTP(t, "http://"+s.addr+"/mcp", "")
	reader.open(t, ctx, "mcp_flood_log_burst")
	readCtx, stopReading := context.WithCancel(ctx)
	var drained atomic.Int64
	reader.listen(t, readCtx, func(rpcMsg) { drained.Add(1) })
	ref := f.run(t, "ref", func() bool { return true })
	stopReading()
	if _, err := reader.hc.Do(deleteRequest(ctx, reader)); err != nil {
		t.Fatal(err)
	}

	// The client that never reads: a session with a level set, and a GET
	// stream on a socket with a small receive buffer that is never read
	// after the response headers.
	stuck := newRawHTTP(t, "http://"+s.addr+"/mcp", "")
	stuck.open(t, ctx, "mcp_flood_log_burst")
	stream := openUnreadStream(t, s.addr, stuck.sid)
	defer stream.Close()
	closed := func() bool { return strings.Contains(s.proc.Stderr(), "the client stopped reading its stream") }
	got := f.run(t, "stuck", closed)

	// The stuck session is gone: its ID is refused.
	resp, err := stuck.hc.Do(stuck.newPost(ctx, request(99, "ping", nil)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	t.Logf("echo p50: idle %v; flood to a second client that reads %v (it read %d messages); flood to one that does not %v (%.2f×)",
		idle, ref.p50, drained.Load(), got.p50, float64(got.p50)/float64(ref.p50))
	t.Logf("list_changed to the go-sdk client: %v with a second reader, %v with the stuck client", ref.changed, got.changed)
	t.Logf("RSS: %d KiB before; flood with a second reader: peak %d KiB (+%.1f MiB); with the stuck client: peak %d KiB (+%.1f MiB over the first flood's end, %d KiB)",
		before, ref.peak, kibToMiB(ref.peak-before), got.peak, kibToMiB(got.peak-got.start), got.start)
	t.Logf("%d MB of notifications per flood; the stuck session closed %v after its flood began; the reading client got %d and %d of %d log messages",
		floodCount*floodSize/1_000_000, got.ended, ref.logs, got.logs, floodCount)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the stuck session's ID after it closed: %s, want 404", resp.Status)
	}
	if d := got.peak - got.start; d > 16<<10 {
		overRSS(t, "RSS grew %.1f MiB with the stuck client, want ≤ 16 MiB", kibToMiB(d))
	}
	if got.p50 > 2*ref.p50 {
		t.Errorf("echo p50 %v with the stuck client, over 2× the %v with a reading one", got.p50, ref.p50)
	}
}

// 100 MB of log messages' data per flood.
const floodCount, floodSize = 25000, 4096

// flood runs log bursts past a reading client and measures what it sees.
type flood struct {
	s             *sb
	good          *mcp.ClientSession
	logs, changes atomic.Int64
}

// floodRun is what one flood measured.
type floodRun struct {
	p50, changed, ended time.Duration
	start, peak, logs   int64 // RSS KiB at the start and at its peak; log messages received
}

// run starts one burst, measures echo calls and a list change during it,
// and waits until done reports true and the reading client has taken what
// it will take.
func (f *flood) run(t *testing.T, name string, done func() bool) floodRun {
	t.Helper()
	pid := f.s.proc.cmd.Process.Pid
	r := floodRun{start: rssKiB(t, pid)}
	var peak atomic.Int64
	peak.Store(r.start)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := readRSS(pid); n >= 0 {
				peak.Store(max(peak.Load(), int64(n)))
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	logs := f.logs.Load()
	began := time.Now()
	mustCall(t, f.good, "mcp_flood_log_burst", map[string]any{"count": floodCount, "size": floodSize})
	r.p50 = callP50(t, f.good, 200)
	had := f.changes.Load()
	changed := time.Now()
	mustCall(t, f.good, "mcp_echo_add_tool", map[string]any{"name": "late_" + name})
	testutil.Eventually(t, 10*time.Second, "list_changed reached the reading client", func() bool { return f.changes.Load() > had })
	r.changed = time.Since(changed).Round(time.Millisecond)
	testutil.Eventually(t, 60*time.Second, name+" flood over", done)
	r.ended = time.Since(began).Round(time.Millisecond)
	// Over once the reading client has taken nothing for half a second.
	for n := int64(-1); n != f.logs.Load(); time.Sleep(500 * time.Millisecond) {
		n = f.logs.Load()
	}
	close(stop)
	<-sampled
	r.peak, r.logs = peak.Load(), f.logs.Load()-logs
	return r
}

func kibToMiB(kib int64) float64 { return float64(kib) / 1024 }

// unreadStream is a GET stream whose body is never read.
type unreadStream struct {
	net.Conn
	sid string
}

// openUnreadStream opens the session's standalone stream on a socket with a
// 4 KiB receive buffer and reads only the response headers.
func openUnreadStream(t *testing.T, addr, sid string) *unreadStream {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n", addr, sid, rawVersion)
	br := bufio.NewReaderSize(c, 16)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("GET stream: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("GET stream headers: %v", err)
		}
		if line == "\r\n" {
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	return &unreadStream{c, sid}
}

// callP50 is the median latency of n echo calls.
func callP50(t *testing.T, cs *mcp.ClientSession, n int) time.Duration {
	t.Helper()
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		mustCall(t, cs, "mcp_echo_echo", map[string]any{"text": "x"})
		d[i] = time.Since(start)
	}
	slices.Sort(d)
	return d[n/2]
}

// rssKiB is the anonymous resident set of a process, from /proc (readRSS).
func rssKiB(t *testing.T, pid int) int64 {
	t.Helper()
	n := readRSS(pid)
	if n < 0 {
		t.Fatalf("no RSS for process %d", pid)
	}
	return int64(n)
}

// deleteRequest ends c's session.
func deleteRequest(ctx context.Context, c *rawHTTP) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("MCP-Protocol-Version", rawVersion)
	return req
}
