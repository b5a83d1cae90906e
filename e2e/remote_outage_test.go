package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// A remote upstream that goes away and comes back on the same address
// (#17): calls fail fast with the documented tool error, the breaker counts
// the failures, /status says what is true, and the first call after the
// upstream's return succeeds soon. Timings are printed, not asserted, past
// generous bounds: the machine is shared.

// outageCall is one call of the steady caller.
type outageCall struct {
	at   time.Time     // when it returned
	took time.Duration // how long it took
	ok   bool
	text string // the tool error's text, or the JSON-RPC error
	rpc  bool   // a JSON-RPC error instead of a result
}

// outageSample is one /status sample of the remote server.
type outageSample struct {
	at             time.Time
	state, breaker string
}

// recorder collects calls and /status samples while an outage runs.
type recorder struct {
	mu      sync.Mutex
	calls   []outageCall
	samples []outageSample
}

func (r *recorder) addCall(c outageCall) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recorder) addSample(s outageSample) {
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}

func (r *recorder) snapshot() ([]outageCall, []outageSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]outageCall(nil), r.calls...), append([]outageSample(nil), r.samples...)
}

// firstOK is the first call at or after from that succeeded.
func (r *recorder) firstOK(from time.Time) (outageCall, bool) {
	calls, _ := r.snapshot()
	for _, c := range calls {
		if c.ok && !c.at.Before(from) {
			return c, true
		}
	}
	return outageCall{}, false
}

// callSteadily calls the remote's echo every interval until ctx ends.
func callSteadily(ctx context.Context, cs *mcp.ClientSession, tool string, interval time.Duration, r *recorder) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 0; ; n++ {
		text := fmt.Sprintf("call %d", n)
		res, err, took := callCtx(cs, 10*time.Second, tool, map[string]any{"text": text})
		c := outageCall{at: time.Now(), took: took}
		switch {
		case err != nil:
			c.rpc, c.text = true, err.Error()
		case res.IsError:
			c.text = textOf(res)
		default:
			c.ok = strings.Contains(textOf(res), text)
			if !c.ok {
				c.text = "unexpected answer " + textOf(res)
			}
		}
		if ctx.Err() != nil {
			return
		}
		r.addCall(c)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sampleStatus records the server's state and breaker every interval until
// ctx ends.
func sampleStatus(ctx context.Context, t *testing.T, s *sb, name string, interval time.Duration, r *recorder) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for _, st := range s.statusDoc(t).Servers {
			if st.Name == name {
				r.addSample(outageSample{at: time.Now(), state: st.State, breaker: st.Breaker})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// startRemoteFixture runs the fixture as a remote server on a fixed port
// and waits until it serves.
func startRemoteFixture(t *testing.T, transport string, port int, mark string, args ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	ready := filepath.Join(dir, "url")
	p := start(t, dir, []string{"GORACE=atexit_sleep_ms=0", markEnv + "=" + mark}, fixture,
		append([]string{"--name", "web", "--transport", transport, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--ready-file", ready}, args...)...)
	waitFile(t, ready, 20*time.Second, p)
	return p
}

// kill stops the process at once, as a crash or a lost host does, and
// waits for it to exit.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.wait(t, 10*time.Second)
}

// TestRemoteOutage: for each remote transport, the upstream is killed
// while a client calls steadily, and restarted on the same port.
func TestRemoteOutage(t *testing.T) {
	for _, tc := range []struct {
		name, transport, path string
		args                  []string
	}{
		{"streamable-stateful", "http", "/mcp", nil},
		{"streamable-stateless", "http", "/mcp", []string{"--stateless"}},
		{"sse", "sse", "/sse", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remoteOutage(t, tc.transport, tc.path, tc.args...)
		})
	}
}

// outageLength is how long the upstream stays away.
const outageLength = 6 * time.Second

func remoteOutage(t *testing.T, transport, path string, args ...string) {
	mark := newMark(t)
	port := freePort(t)
	web := startRemoteFixture(t, transport, port, mark, args...)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"web": map[string]any{"type": transport, "url": fmt.Sprintf("http://127.0.0.1:%d%s", port, path)},
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_web_echo")
	s.waitServer(t, "web", 10*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })

	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { callSteadily(ctx, cs, "mcp_web_echo", 100*time.Millisecond, rec) })
	wg.Go(func() { sampleStatus(ctx, t, s, "web", 50*time.Millisecond, rec) })
	defer func() { cancel(); wg.Wait() }()

	testutil.Eventually(t, 10*time.Second, "a call before the outage", func() bool { _, ok := rec.firstOK(time.Time{}); return ok })
	hung := make(chan outageCall, 1)
	go func() {
		res, err, _ := callCtx(cs, 30*time.Second, "mcp_web_hang", map[string]any{})
		c := outageCall{at: time.Now(), rpc: err != nil}
		if err != nil {
			c.text = err.Error()
		} else {
			c.text = textOf(res)
		}
		hung <- c
	}()
	s.waitServer(t, "web", 10*time.Second, "the hanging call in flight", func(st serverState) bool { return st.InFlight > 0 })
	down := time.Now()
	web.kill(t)
	inFlight := <-hung
	time.Sleep(outageLength) // the outage itself: calls go on meanwhile
	web = startRemoteFixture(t, transport, port, mark, args...)
	back := time.Now()
	testutil.Eventually(t, 10*time.Second, "a good call after the upstream's return", func() bool { _, ok := rec.firstOK(back); return ok })
	time.Sleep(300 * time.Millisecond) // a few more calls, to see they stay good
	cancel()
	wg.Wait()
	reportOutage(t, rec, down, back)
	t.Logf("call in flight at the outage: answered %s after it: %q", since(down, inFlight.at), inFlight.text)
	if inFlight.rpc || !strings.HasPrefix(inFlight.text, "server 'web' is unreachable, retrying in ~") {
		t.Errorf("call in flight at the outage got %q (JSON-RPC error: %v), want the documented tool error", inFlight.text, inFlight.rpc)
	}
	if d := inFlight.at.Sub(down); d > 10*time.Second {
		t.Errorf("call in flight at the outage answered %s after it", d)
	}
	web.stop(5 * time.Second)
}

// reportOutage prints the outage's figures and checks what must hold: every
// failed call was the documented tool error, the breaker opened, /status
// left ready during the outage and came back to it.
func reportOutage(t *testing.T, rec *recorder, down, back time.Time) {
	t.Helper()
	calls, samples := rec.snapshot()
	var (
		firstErr       time.Time
		fails, rpcErrs int
		slowest        time.Duration
	)
	for _, c := range calls {
		if c.ok || c.at.Before(down) {
			continue
		}
		fails++
		slowest = max(slowest, c.took)
		if c.rpc {
			rpcErrs++
			t.Errorf("call at +%s got a JSON-RPC error, want a tool error: %s", c.at.Sub(down).Round(time.Millisecond), c.text)
			continue
		}
		if firstErr.IsZero() {
			firstErr = c.at
		}
		if !strings.HasPrefix(c.text, "server 'web' is unreachable, retrying in ~") {
			t.Errorf("call at +%s: tool error %q, want \"server 'web' is unreachable, retrying in ~Ns\"", c.at.Sub(down).Round(time.Millisecond), c.text)
		}
	}
	ok, _ := rec.firstOK(back)
	states, breakerOpened, readyDuring := stateLog(samples, down, firstErr, back)
	t.Logf("outage → first documented error: %s", since(down, firstErr))
	t.Logf("failed calls during the outage: %d (JSON-RPC errors: %d), the slowest answered in %s", fails, rpcErrs, slowest.Round(time.Millisecond))
	t.Logf("breaker opened: %v", breakerOpened)
	t.Logf("/status (state/breaker) from the outage on: %s", strings.Join(states, " → "))
	t.Logf("return → first OK call: %s", since(back, ok.at))
	if firstErr.IsZero() {
		t.Fatal("no call failed during the outage")
	}
	if d := firstErr.Sub(down); d > 10*time.Second {
		t.Errorf("first error %s after the outage", d)
	}
	if slowest > 10*time.Second {
		t.Errorf("a failed call took %s, want to fail fast", slowest)
	}
	if !breakerOpened {
		t.Error("the breaker never opened during the outage")
	}
	if readyDuring {
		t.Error("/status said ready during the outage, after the first failed call")
	}
	if last := samples[len(samples)-1]; last.state != "ready" || last.breaker != "closed" {
		t.Errorf("after the return /status says %s/%s, want ready/closed", last.state, last.breaker)
	}
}

// stateLog lists the distinct state/breaker pairs seen from the outage on,
// with their time; whether the breaker opened; and whether a sample taken
// a second after the first error and before the return said ready.
func stateLog(samples []outageSample, down, firstErr, back time.Time) (log []string, opened, readyDuring bool) {
	last := ""
	for _, sm := range samples {
		if sm.at.Before(down) {
			continue
		}
		if sm.breaker == "open" {
			opened = true
		}
		if !firstErr.IsZero() && sm.at.After(firstErr.Add(time.Second)) && sm.at.Before(back) && sm.state == "ready" {
			readyDuring = true
		}
		if cur := sm.state + "/" + sm.breaker; cur != last {
			log = append(log, fmt.Sprintf("%s at +%s", cur, sm.at.Sub(down).Round(time.Millisecond)))
			last = cur
		}
	}
	return log, opened, readyDuring
}

func since(from, to time.Time) string {
	if to.IsZero() {
		return "never"
	}
	return to.Sub(from).Round(time.Millisecond).String()
}
