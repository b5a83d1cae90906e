package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// The abuse tests of #17 ("bounded under abuse and faults"): each drives
// the real binary past one of its limits and prints what it measured. Memory
// is switchboard's anonymous resident set (RssAnon: heap, stacks, written
// data), read from /proc: what abuse can grow. The pages of its binary are
// left out: switchboard drops them from its resident set when it goes idle
// and maps back what it runs, so they come and go with its activity.

// readRSS returns pid's anonymous resident set size in KiB, or -1.
func readRSS(pid int) int { return statusKB(pid, "RssAnon") }

// rssPeak samples pid's anonymous RSS (readRSS) every 20 ms from now until
// the returned func is called, which returns the highest sample in KiB.
func rssPeak(pid int) (stop func() int) {
	done := make(chan struct{})
	var peak atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb := int64(readRSS(pid)); kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		if kb := int64(readRSS(pid)); kb > peak.Load() {
			peak.Store(kb)
		}
		return int(peak.Load())
	}
}

// overRSS reports a broken memory limit. Under -race it is only logged:
// the race detector's shadow memory makes RSS no figure of the product.
func overRSS(t *testing.T, format string, args ...any) {
	t.Helper()
	if raceEnabled {
		t.Logf("not checked under -race: "+format, args...)
		return
	}
	t.Errorf(format, args...)
}

// mib formats KiB as MiB.
func mib(kb int) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

// opener opens streamable-HTTP sessions on one endpoint with raw
// initialize POSTs over a few keep-alive connections, and never ends them.
type opener struct {
	url, token, version string
	hc                  *http.Client
}

func newOpener(t *testing.T, url, token string, conns int) *opener {
	tr := &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns}
	t.Cleanup(tr.CloseIdleConnections)
	return &opener{url: url, token: token, version: rawVersion, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// post sends body, with the session ID sid if set, and returns the
// response's status, session ID header and body.
func (o *opener) post(ctx context.Context, sid string, body []byte) (status int, gotSID string, answer []byte, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", o.version)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if o.token != "" {
		req.Header.Set("Authorization", "Bearer "+o.token)
	}
	resp, err := o.hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	answer, err = io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), answer, err
}

// open initializes one session and returns its ID; a refusal is an error
// naming the status and the answer.
func (o *opener) open(ctx context.Context) (string, int, error) {
	params := initializeParams()
	params["protocolVersion"] = o.version
	status, sid, answer, err := o.post(ctx, "", request(1, "initialize", params))
	switch {
	case err != nil:
		return "", status, err
	case status != http.StatusOK || sid == "" || !bytes.Contains(answer, []byte(`"protocolVersion"`)):
		return "", status, fmt.Errorf("initialize: status %d, session %q: %s", status, sid, bytes.TrimSpace(answer))
	}
	return sid, status, nil
}

// openMany opens n sessions, workers at a time, and returns their IDs; it
// fails the test at the first refusal.
func (o *opener) openMany(t *testing.T, n, workers int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ids := make([]string, n)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				sid, _, err := o.open(ctx)
				if err != nil {
					err = fmt.Errorf("session %d of %d: %w", i+1, n, err)
					failed.CompareAndSwap(nil, &err)
					return
				}
				ids[i] = sid
			}
		})
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		t.Fatal(*p)
	}
	return ids
}

// viewSessions is the open session count of the default view in /status.
func (s *sb) viewSessions(t *testing.T) int {
	t.Helper()
	views, _ := s.status(t)["views"].(map[string]any)
	v, _ := views["default"].(map[string]any)
	n, _ := v["sessions"].(float64)
	return int(n)
}

// TestAbuseAbandonedSessions: 10,000 streamable-HTTP sessions opened and
// never ended hold memory only until sessionIdleTimeout: then they end, and
// switchboard's RSS comes back. Two waves: the first leaves the Go
// runtime's own bookkeeping for a heap of its peak (GC metadata, span
// structures; never returned) resident, which is printed; the second,
// measured from the first's end, must come back within 10 % — nothing
// accumulates per abandoned session. See #17.
func TestAbuseAbandonedSessions(t *testing.T) {
	const n = 10000
	const idle = 15 * time.Second
	s := startSwitchboard(t, map[string]any{
		"logLevel":           "info",
		"sessionIdleTimeout": idle.Milliseconds(),
		"maxSessions":        n + 1, // and the warm-up session
		"mcpServers":         map[string]any{"fx": fixtureServer("fx")},
	})
	s.waitServer(t, "fx", 30*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	o := newOpener(t, "http://"+s.addr+"/mcp", "", 4)
	o.openMany(t, 1, 1) // the request path is warm before the baseline
	start, goStart := readRSS(s.pid()), s.statusDoc(t).Goroutines
	before := start
	for wave := 1; wave <= 2; wave++ {
		began := time.Now()
		stop := rssPeak(s.pid())
		o.openMany(t, n, 4)
		opened := time.Since(began)
		open := s.viewSessions(t)
		peak, goPeak := stop(), s.statusDoc(t).Goroutines
		t.Logf("wave %d: %d sessions opened in %s (%.0f/s); %d open; RSS %s before, %s at peak (+%s, %.1f KiB a session); goroutines %d",
			wave, n, opened.Round(time.Millisecond), float64(n)/opened.Seconds(), open, mib(before), mib(peak), mib(peak-before), float64(peak-before)/n, goPeak)

		testutil.Eventually(t, idle+60*time.Second, "every session expired", func() bool { return s.viewSessions(t) == 0 })
		expired := time.Since(began)
		// A sweep that ends this many returns their memory at once; give
		// the process a few seconds to settle.
		settled := time.Now()
		after := readRSS(s.pid())
		for !raceEnabled && after > before*11/10 && time.Since(settled) < 5*time.Second {
			time.Sleep(250 * time.Millisecond)
			after = readRSS(s.pid())
		}
		goAfter := s.statusDoc(t).Goroutines
		t.Logf("wave %d: all expired %s after the first was opened; RSS %s %s later (%+.1f %% of the wave's start, %+.1f %% of the first's); goroutines %d",
			wave, expired.Round(time.Millisecond), mib(after), time.Since(settled).Round(time.Millisecond),
			100*float64(after-before)/float64(before), 100*float64(after-start)/float64(start), goAfter)
		if wave == 2 && after > before*11/10 {
			overRSS(t, "RSS %s after the second wave expired, more than 10 %% over %s before it", mib(after), mib(before))
		}
		if goAfter > goStart+20 {
			t.Errorf("%d goroutines after the sessions expired, %d before", goAfter, goStart)
		}
		before = after
	}
}

// TestAbuseAbandonedPerClientSessions: with isolation: per-client, 20
// sessions that each called a tool and were then abandoned hold 20
// children of their own; the idle timeout ends the sessions and reaps every
// one of those children, leaving the shared instance that serves the
// catalog. See #17.
func TestAbuseAbandonedPerClientSessions(t *testing.T) {
	t.Parallel()
	const n = 20
	const idle = 3 * time.Second
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{
		"sessionIdleTimeout": idle.Milliseconds(),
		"mcpServers":         map[string]any{"pc": with(markedServer("pc", mark), "isolation", "per-client")},
	})
	s.waitServer(t, "pc", 30*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	waitRouted(t, s, "mcp_pc_echo")
	sharedPIDs := map[int]bool{}
	for _, p := range marked(mark) {
		sharedPIDs[p.pid] = true
	}
	shared := len(sharedPIDs)
	// The per-client children, sampled while the calls run: on a loaded
	// machine the first sessions can idle out, and their children be
	// reaped, before the last calls are answered, so a count after the
	// calls can miss one that was there. Each lives through its call and
	// the idle timeout after it, far longer than a sample's interval.
	children := map[int]bool{}
	sample := func() {
		for _, p := range marked(mark) {
			if !sharedPIDs[p.pid] {
				children[p.pid] = true
			}
		}
	}
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	})
	o := newOpener(t, "http://"+s.addr+"/mcp", "", n) // a connection each: none waits for another's
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := request(2, "tools/call", map[string]any{"name": "mcp_pc_echo", "arguments": map[string]any{"text": "mine"}})
	// All at once, each session opened, initialized and called in turn by
	// a goroutine of its own: one after the other, the last sessions would
	// idle out while the first ones' children start, and opened all first,
	// the first ones while the last ones open (on a loaded machine, 20
	// initializations can take longer than the idle timeout).
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sid, _, err := o.open(ctx)
			if err != nil {
				t.Errorf("session %d: %v", i, err)
				return
			}
			if status, _, _, err := o.post(ctx, sid, notification("notifications/initialized", nil)); err != nil || status != http.StatusAccepted {
				t.Errorf("session %d: notifications/initialized: %d %v", i, status, err)
				return
			}
			status, _, answer, err := o.post(ctx, sid, call)
			if err != nil || status != http.StatusOK || !bytes.Contains(answer, []byte("mine")) || bytes.Contains(answer, []byte(`"isError":true`)) {
				t.Errorf("session %d: tools/call: %d %v: %s", i, status, err, answer)
			}
		})
	}
	wg.Wait()
	close(stopSampling)
	sampling.Wait()
	sample()
	if t.Failed() {
		t.FailNow()
	}
	start := time.Now()
	t.Logf("%d abandoned sessions: %d per-client children besides %d shared", n, len(children), shared)
	if len(children) != n {
		t.Errorf("%d per-client children for %d sessions", len(children), n)
	}
	testutil.Eventually(t, idle+20*time.Second, "the per-client children reaped", func() bool { return len(marked(mark)) == shared })
	t.Logf("every per-client child reaped %s after the last call (idle timeout %s); %d sessions open", time.Since(start).Round(time.Millisecond), idle, s.viewSessions(t))
	if open := s.viewSessions(t); open != 0 {
		t.Errorf("%d sessions still open after their children were reaped", open)
	}
	noZombies(t, s.pid(), 5*time.Second)
}

// TestAbuseSessionCap: maxSessions caps the open sessions per token: one
// more is refused with 429 naming the limit, while another token still
// opens its own; once idle sessions expire, the token opens sessions again.
// See #17.
func TestAbuseSessionCap(t *testing.T) {
	t.Parallel()
	const limit = 50
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, map[string]any{
		"maxSessions":        limit,
		"sessionIdleTimeout": 3000,
		"auth":               map[string]any{"tokens": []string{"secret://env/TOK_A", "secret://env/TOK_B"}},
		"mcpServers":         map[string]any{"fx": fixtureServer("fx")},
	}, []string{"TOK_A=abuse-token-a-0123456789", "TOK_B=abuse-token-b-9876543210"})
	url := "http://" + s.addr + "/mcp"
	a := newOpener(t, url, "abuse-token-a-0123456789", 4)
	b := newOpener(t, url, "abuse-token-b-9876543210", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a.openMany(t, limit, 4)
	refused := 0
	var last error
	for range 20 {
		_, status, err := a.open(ctx)
		if status == http.StatusTooManyRequests {
			refused++
			last = err
		}
	}
	t.Logf("token A: %d sessions opened, then %d of 20 more refused: %v", limit, refused, last)
	if refused != 20 || !strings.Contains(last.Error(), "maxSessions") {
		t.Errorf("past maxSessions: %d of 20 refused with 429; last: %v", refused, last)
	}
	if _, status, err := b.open(ctx); err != nil {
		t.Errorf("token B, with none of its own open: %d %v", status, err)
	}
	testutil.Eventually(t, 30*time.Second, "token A's sessions expired", func() bool { return s.viewSessions(t) == 0 })
	if _, status, err := a.open(ctx); err != nil {
		t.Errorf("token A after its sessions expired: %d %v", status, err)
	}
}

// waitRouted waits until tools are listed, through a session it then ends:
// ready in /status comes a moment before the tools are routed.
func waitRouted(t *testing.T, s *sb, tools ...string) {
	t.Helper()
	cs := s.client(t, nil)
	waitListed(t, cs, tools...)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
}
