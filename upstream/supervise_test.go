package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// The tests in this file run the supervisor and the breaker on in-memory
// sessions inside synctest bubbles, so backoff, stable-run and breaker
// timings are checked to the nanosecond without waiting for them. What a
// bubble cannot hold (real processes, pipes, signals) is covered by
// stdio_test.go and the e2e tests, with real clocks and loose bounds.

// fakeUpstream is an in-memory MCP server that a Handle dials through the
// test transport hook. Connection attempts can be made to fail, and live
// sessions can be cut.
type fakeUpstream struct {
	server *mcp.Server

	mu       sync.Mutex
	refuse   int  // refuse this many more attempts
	refusing bool // refuse every attempt
	attempts []time.Time
	sessions []*mcp.ServerSession

	cancelled atomic.Int32 // hang calls whose context ended
}

func newFakeUpstream() *fakeUpstream {
	f := &fakeUpstream{server: mcp.NewServer(&mcp.Implementation{Name: "fake"}, nil)}
	obj := map[string]any{"type": "object"}
	f.server.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	f.server.AddTool(&mcp.Tool{Name: "hang", InputSchema: obj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		f.cancelled.Add(1)
		return nil, ctx.Err()
	})
	f.server.AddTool(&mcp.Tool{Name: "sleep", InputSchema: obj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(2 * time.Second):
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slept"}}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	f.server.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "tool says no"}}}, nil
	})
	f.server.AddTool(&mcp.Tool{Name: "rpcerr", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad params"}
	})
	return f
}

func (f *fakeUpstream) transport(upstream.Spec) (mcp.Transport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts = append(f.attempts, time.Now())
	if f.refusing || f.refuse > 0 {
		f.refuse--
		return nil, errors.New("connection refused")
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.server.Connect(context.Background(), st, nil)
	if err != nil {
		return nil, err
	}
	f.sessions = append(f.sessions, ss)
	return ct, nil
}

// cut ends the newest session from the server side, like a crash.
func (f *fakeUpstream) cut() {
	f.mu.Lock()
	ss := f.sessions[len(f.sessions)-1]
	f.mu.Unlock()
	_ = ss.Close()
}

func (f *fakeUpstream) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ss := range f.sessions {
		_ = ss.Close()
	}
}

func (f *fakeUpstream) attemptTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.attempts...)
}

// bubble runs fn in a synctest bubble with a fake upstream behind every
// Handle, and closes the fake's sessions at the end so the bubble empties.
func bubble(t *testing.T, fn func(t *testing.T, f *fakeUpstream)) {
	t.Helper()
	checkGoroutines(t)
	f := newFakeUpstream()
	defer upstream.SetTestTransport(f.transport)()
	synctest.Test(t, func(t *testing.T) {
		defer f.closeAll()
		fn(t, f)
	})
}

func fakeSpec(name string) upstream.Spec {
	return upstream.Spec{
		Name: name, Transport: upstream.TransportStdio, Command: "unused",
		ConnectTimeout: 5 * time.Second, CallTimeout: 10 * time.Second,
		RestartOnCrash: true, MaxRestarts: 5,
	}
}

func newHandle(t *testing.T, spec upstream.Spec) *upstream.Handle {
	log, _ := testLogger(t)
	return upstream.New(spec, upstream.Options{Logger: log})
}

func call(h *upstream.Handle, ctx context.Context, tool string) (*mcp.CallToolResult, error) {
	return h.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}, nil)
}

// within checks that got is d ±10 %.
func within(t *testing.T, what string, got, d time.Duration) {
	t.Helper()
	if got < d*9/10 || got > d*11/10 {
		t.Errorf("%s: %s, want %s ±10%%", what, got, d)
	}
}

func TestBackoffJitter(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 7: 30 * time.Second, 50: 30 * time.Second} {
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for range 500 {
			d := upstream.BackoffDelay(n)
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < want*9/10 || hi > want*11/10 {
			t.Errorf("attempt %d: delays in [%s, %s], want %s ±10%%", n, lo, hi, want)
		}
		if hi-lo < want/20 {
			t.Errorf("attempt %d: delays in [%s, %s] barely vary: no jitter", n, lo, hi)
		}
	}
}

func TestBackoffScheduleUntilFailed(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		f.refusing = true
		spec := fakeSpec("down")
		spec.MaxRestarts = 8
		h := newHandle(t, spec)
		h.Start()
		defer h.Close(context.Background())
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		at := f.attemptTimes()
		want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
		if len(at) != len(want)+1 {
			t.Fatalf("%d attempts, want %d", len(at), len(want)+1)
		}
		for i, w := range want {
			within(t, "delay before attempt "+string(rune('2'+i)), at[i+1].Sub(at[i]), w*time.Second)
		}
		st := h.Status()
		if st.State != upstream.StateFailed || st.Restarts != 8 || st.Failures != 9 || !strings.Contains(st.LastError, "connection refused") {
			t.Errorf("status %+v", st)
		}
		select {
		case <-h.FirstAttempt():
		default:
			t.Error("first attempt never finished")
		}
	})
}

func TestRemoteUpstreamIsRetriedForever(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		f.refusing = true
		spec := fakeSpec("web")
		spec.Transport, spec.Command, spec.URL = upstream.TransportHTTP, "", "http://127.0.0.1:1/mcp"
		spec.MaxRestarts = 2
		h := newHandle(t, spec)
		h.Start()
		defer h.Close(context.Background())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if st := h.Status(); st.State != upstream.StateRestarting {
			t.Errorf("after 2s: %s, want restarting", st.State)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		st := h.Status()
		if st.State != upstream.StateFailed || st.NextAttempt.IsZero() {
			t.Fatalf("after 5m: %+v, want failed with a next attempt", st)
		}
		at := f.attemptTimes()
		if len(at) < 10 {
			t.Fatalf("%d attempts in 5 minutes", len(at))
		}
		within(t, "late retry interval", at[len(at)-1].Sub(at[len(at)-2]), 30*time.Second)
		// It comes back: the next attempt connects and lists.
		f.mu.Lock()
		f.refusing = false
		f.mu.Unlock()
		time.Sleep(35 * time.Second)
		synctest.Wait()
		if st := h.Status(); st.State != upstream.StateReady || h.Catalog() == nil {
			t.Errorf("after it came back: %+v", st)
		}
	})
}

func TestRestartKeepsToolsAndFailsFast(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, fakeSpec("flaky"))
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		if h.Status().State != upstream.StateReady {
			t.Fatalf("not ready: %+v", h.Status())
		}
		before := h.Catalog()

		f.cut()
		synctest.Wait()
		st := h.Status()
		if st.State != upstream.StateRestarting {
			t.Fatalf("after the cut: %s", st.State)
		}
		within(t, "first restart delay", time.Until(st.NextAttempt), time.Second)
		if h.Catalog() != before {
			t.Error("catalog changed while restarting")
		}
		start := time.Now()
		_, err := call(h, context.Background(), "echo")
		if err == nil || err.Error() != "server 'flaky' is restarting, next attempt in ~1s" {
			t.Errorf("call while restarting: %v", err)
		}
		if time.Since(start) != 0 {
			t.Errorf("call while restarting waited %s", time.Since(start))
		}

		// The server changed meanwhile; the restart lists it afresh.
		f.server.AddTool(&mcp.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if st := h.Status(); st.State != upstream.StateReady || st.Restarts != 1 {
			t.Fatalf("after the restart: %+v", st)
		}
		if got := len(h.Catalog().Tools); got != len(before.Tools)+1 {
			t.Errorf("catalog after restart has %d tools, want %d", got, len(before.Tools)+1)
		}
		if _, err := call(h, context.Background(), "echo"); err != nil {
			t.Errorf("call after restart: %v", err)
		}
	})
}

func TestStableRunResetsFailures(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, fakeSpec("steady"))
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		crash := func() time.Duration {
			f.cut()
			synctest.Wait()
			st := h.Status()
			d := time.Until(st.NextAttempt)
			time.Sleep(d + time.Millisecond)
			synctest.Wait()
			if h.Status().State != upstream.StateReady {
				t.Fatalf("not back: %+v", h.Status())
			}
			return d
		}
		within(t, "first crash", crash(), time.Second)
		within(t, "second crash in a row", crash(), 2*time.Second)
		within(t, "third crash in a row", crash(), 4*time.Second)
		time.Sleep(5 * time.Minute)
		within(t, "crash after a five-minute run", crash(), time.Second)
	})
}

// TestKilledEvery20sStaysUp: a server whose every start succeeds but that
// is killed every 20 s, with nobody calling it, is restarted after the
// first backoff step each time for 10 minutes (30 crashes against the
// default maxRestarts of 5) and never goes failed: each run was healthy.
func TestKilledEvery20sStaysUp(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		var failed atomic.Bool
		log, _ := testLogger(t)
		h := upstream.New(fakeSpec("target"), upstream.Options{Logger: log, OnChange: func(h *upstream.Handle) {
			if h.Status().State == upstream.StateFailed {
				failed.Store(true)
			}
		}})
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		start := time.Now()
		for kill := 1; time.Since(start) < 10*time.Minute; kill++ {
			time.Sleep(start.Add(time.Duration(kill) * 20 * time.Second).Sub(time.Now()))
			f.cut()
			synctest.Wait()
			st := h.Status()
			if st.State != upstream.StateRestarting || st.Failures != 0 || st.Restarts != kill {
				t.Fatalf("kill %d at %s: %s, %d failed starts, %d restarts; want restarting, 0, %d",
					kill, time.Since(start), st.State, st.Failures, st.Restarts, kill)
			}
			within(t, fmt.Sprintf("kill %d: backoff", kill), time.Until(st.NextAttempt), time.Second)
			time.Sleep(2 * time.Second)
			synctest.Wait()
			if st := h.Status(); st.State != upstream.StateReady {
				t.Fatalf("kill %d: not back after 2s: %+v", kill, st)
			}
		}
		if failed.Load() {
			t.Error("the server was failed at some point")
		}
		if n := len(f.attemptTimes()); n != 31 {
			t.Errorf("%d starts in 10 minutes, want 31 (one and 30 restarts)", n)
		}
	})
}

// TestHealthyRunRule: a run that crashes within 10 s of being ready
// without answering a call counts as a failed start (the backoff doubles,
// and the 6th in a row makes the server failed); one that stayed up 10 s,
// or answered a call however soon it crashed, does not.
func TestHealthyRunRule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		up      time.Duration // how long each run is up before it is killed
		call    bool          // each run answers a call
		healthy bool
	}{
		{name: "9s, no call", up: 9 * time.Second},
		{name: "10s, no call", up: 10 * time.Second, healthy: true},
		{name: "at once, one call", call: true, healthy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, f *fakeUpstream) {
				h := newHandle(t, fakeSpec("short"))
				h.Start()
				defer h.Close(context.Background())
				synctest.Wait()
				var delays []time.Duration
				for kill := 1; kill <= 8; kill++ {
					if st := h.Status(); st.State != upstream.StateReady {
						t.Fatalf("before kill %d: %+v", kill, st)
					}
					time.Sleep(tc.up)
					if tc.call {
						if _, err := call(h, context.Background(), "echo"); err != nil {
							t.Fatalf("run %d: call: %v", kill, err)
						}
					}
					f.cut()
					synctest.Wait()
					st := h.Status()
					if st.State == upstream.StateFailed {
						if tc.healthy || kill != 6 {
							t.Fatalf("failed at kill %d", kill)
						}
						break
					}
					d := time.Until(st.NextAttempt)
					delays = append(delays, d)
					time.Sleep(d + time.Millisecond)
					synctest.Wait()
				}
				want := []time.Duration{1, 1, 1, 1, 1, 1, 1, 1}
				if !tc.healthy {
					want = []time.Duration{1, 2, 4, 8, 16}
				}
				if len(delays) != len(want) {
					t.Fatalf("%d restarts (%v), want %d", len(delays), delays, len(want))
				}
				for i, w := range want {
					within(t, fmt.Sprintf("restart %d", i+1), delays[i], w*time.Second)
				}
				st := h.Status()
				if tc.healthy && (st.State != upstream.StateReady || st.Failures != 0) {
					t.Errorf("after 8 healthy runs: %+v", st)
				}
				if !tc.healthy && (st.State != upstream.StateFailed || st.Failures != 6) {
					t.Errorf("after 6 short runs: %+v, want failed after 6 failed starts", st)
				}
			})
		})
	}
}

// TestFailedStartsAfterHealthyRun: a healthy run's crash is not counted,
// but every failed start after it is: with maxRestarts 5 the server is
// failed at the 6th failed start in a row, after waiting 1 s (the crash),
// then 1, 2, 4, 8, 16 s (the failed starts).
func TestFailedStartsAfterHealthyRun(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, fakeSpec("gone"))
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		time.Sleep(time.Minute)
		f.mu.Lock()
		f.refusing = true
		f.mu.Unlock()
		f.cut()
		crashed := time.Now()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		at := append([]time.Time{crashed}, f.attemptTimes()[1:]...)
		want := []time.Duration{1, 1, 2, 4, 8, 16}
		if len(at) != len(want)+1 {
			t.Fatalf("%d attempts after the crash, want %d", len(at)-1, len(want))
		}
		for i, w := range want {
			within(t, fmt.Sprintf("delay before restart %d", i+1), at[i+1].Sub(at[i]), w*time.Second)
		}
		if st := h.Status(); st.State != upstream.StateFailed || st.Failures != 6 || st.Restarts != 6 {
			t.Errorf("status %+v, want failed after 6 failed starts", st)
		}
	})
}

func TestMaxRestartsFailsAndWithdrawsTools(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		spec := fakeSpec("fragile")
		spec.MaxRestarts = 1
		h := newHandle(t, spec)
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		f.cut()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if h.Status().State != upstream.StateReady {
			t.Fatalf("first crash not restarted: %+v", h.Status())
		}
		f.cut()
		synctest.Wait()
		st := h.Status()
		if st.State != upstream.StateFailed || h.Catalog() != nil {
			t.Fatalf("second crash: %+v, catalog %v", st, h.Catalog())
		}
		_, err := call(h, context.Background(), "echo")
		var ue *upstream.UnavailableError
		if !errors.As(err, &ue) || ue.State != upstream.StateFailed {
			t.Errorf("call to a failed server: %v", err)
		}
	})
}

func TestNoRestartOnCrash(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		spec := fakeSpec("once")
		spec.RestartOnCrash = false
		h := newHandle(t, spec)
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		f.cut()
		time.Sleep(time.Minute)
		synctest.Wait()
		if st := h.Status(); st.State != upstream.StateFailed || st.Restarts != 0 {
			t.Errorf("%+v", st)
		}
		if n := len(f.attemptTimes()); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
}

func TestBreakerOpensFailsFastAndProbes(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		spec := fakeSpec("sticky")
		spec.CallTimeout = 100 * time.Millisecond
		spec.BreakerFailures = 3
		spec.BreakerOpen = 10 * time.Second
		h := newHandle(t, spec)
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()

		for i := range 3 {
			start := time.Now()
			_, err := call(h, context.Background(), "hang")
			if err == nil || err.Error() != "Tool call timed out after 100ms" {
				t.Fatalf("hang #%d: %v", i+1, err)
			}
			if d := time.Since(start); d != 100*time.Millisecond {
				t.Errorf("hang #%d cost %s, want exactly the tool timeout", i+1, d)
			}
		}
		synctest.Wait()
		if n := f.cancelled.Load(); n != 3 {
			t.Errorf("upstream saw %d cancellations, want 3", n)
		}
		st := h.Status()
		if st.Breaker != "open" {
			t.Fatalf("breaker %s after 3 timeouts", st.Breaker)
		}
		if got := time.Until(st.BreakerProbe); got != 10*time.Second {
			t.Errorf("probe in %s, want 10s", got)
		}
		start := time.Now()
		_, err := call(h, context.Background(), "echo")
		if err == nil || err.Error() != "server 'sticky' is unavailable: circuit breaker open after 3 consecutive failures, next probe in ~10s" {
			t.Errorf("call with the breaker open: %v", err)
		}
		if time.Since(start) != 0 {
			t.Error("open breaker did not fail fast")
		}

		// Half-open (just after the open period): a failing probe opens it
		// again at once.
		time.Sleep(10*time.Second + time.Nanosecond)
		if st := h.Status(); st.Breaker != "half-open" {
			t.Fatalf("breaker %s after the open period", st.Breaker)
		}
		if _, err := call(h, context.Background(), "hang"); err == nil {
			t.Fatal("failing probe succeeded")
		}
		if st := h.Status(); st.Breaker != "open" {
			t.Fatalf("breaker %s after a failed probe", st.Breaker)
		}
		// A good probe closes it.
		time.Sleep(10*time.Second + time.Nanosecond)
		if _, err := call(h, context.Background(), "echo"); err != nil {
			t.Fatalf("probe: %v", err)
		}
		if st := h.Status(); st.Breaker != "closed" || !st.BreakerProbe.IsZero() {
			t.Errorf("breaker %s after a good probe", st.Breaker)
		}
	})
}

func TestBreakerIgnoresAnswersAndCallerCancels(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		spec := fakeSpec("calm")
		spec.BreakerFailures = 2
		h := newHandle(t, spec)
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		for range 5 {
			if res, err := call(h, context.Background(), "fail"); err != nil || !res.IsError {
				t.Fatalf("isError tool: %v %v", res, err)
			}
			var we *jsonrpc.Error
			if _, err := call(h, context.Background(), "rpcerr"); !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("JSON-RPC error not passed through: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, err := call(h, ctx, "hang")
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("caller's own deadline: %v", err)
			}
		}
		if st := h.Status(); st.Breaker != "closed" {
			t.Errorf("breaker %s", st.Breaker)
		}
		if n := upstream.BreakerConsecutiveFailures(h); n != 0 {
			t.Errorf("%d failures counted", n)
		}
	})
}

func TestCloseDrainsInFlightCalls(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, fakeSpec("drain"))
		h.Start()
		synctest.Wait()
		done := make(chan error, 1)
		go func() {
			res, err := call(h, context.Background(), "sleep")
			if err == nil && res.Content[0].(*mcp.TextContent).Text != "slept" {
				err = errors.New("wrong answer")
			}
			done <- err
		}()
		synctest.Wait()
		start := time.Now()
		_ = h.Close(context.Background())
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("close returned after %s, want when the call finished (2s)", d)
		}
		if err := <-done; err != nil {
			t.Errorf("in-flight call: %v", err)
		}
		if _, err := call(h, context.Background(), "echo"); !errors.Is(err, upstream.ErrUnavailable) {
			t.Errorf("call after close: %v", err)
		}
	})
}

// TestCloseReturnsAsTheLastCallEnds: Close's drain ends at the very instant
// the last call in flight ends, whether Close began before that instant or
// at it (racing the call's end), and calls that arrive while it drains are
// refused without holding it up. A lost wake-up would leave Close blocked
// (the bubble reports a deadlock) or late.
func TestCloseReturnsAsTheLastCallEnds(t *testing.T) {
	const calls = 4
	end := 2*time.Second + (calls-1)*time.Millisecond // the last call's end
	for _, closeAt := range []time.Duration{0, time.Second, end - time.Millisecond, end} {
		for range 10 {
			bubble(t, func(t *testing.T, f *fakeUpstream) {
				h := newHandle(t, fakeSpec("drain"))
				h.Start()
				synctest.Wait()
				start := time.Now()
				done := make(chan error, calls)
				for i := range calls {
					if i > 0 {
						time.Sleep(time.Millisecond)
					}
					go func() {
						_, err := call(h, context.Background(), "sleep")
						done <- err
					}()
				}
				synctest.Wait() // every call is in flight
				time.Sleep(closeAt - time.Since(start))
				refused := make(chan error, 1)
				go func() {
					time.Sleep(time.Nanosecond)
					_, err := call(h, context.Background(), "echo")
					refused <- err
				}()
				_ = h.Close(context.Background())
				if got, want := time.Since(start), max(closeAt, end); got != want {
					t.Errorf("close at %s: returned at %s, want %s", closeAt, got, want)
				}
				for range calls {
					if err := <-done; err != nil {
						t.Errorf("close at %s: call in flight: %v", closeAt, err)
					}
				}
				if err := <-refused; closeAt < end && !errors.Is(err, upstream.ErrUnavailable) {
					t.Errorf("close at %s: call during the drain: %v", closeAt, err)
				}
			})
		}
	}
}

func TestCloseCancelsCallsThatOutliveTheDrain(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, fakeSpec("cut"))
		h.Start()
		synctest.Wait()
		done := make(chan error, 1)
		go func() {
			_, err := call(h, context.Background(), "hang")
			done <- err
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_ = h.Close(ctx)
		if d := time.Since(start); d != time.Second {
			t.Errorf("close took %s, want the 1s drain", d)
		}
		err := <-done
		if err == nil || err.Error() != "server 'cut' is unavailable: switchboard stopped it during the call" {
			t.Errorf("cut call: %v", err)
		}
		synctest.Wait()
		if n := f.cancelled.Load(); n != 1 {
			t.Errorf("upstream saw %d cancellations, want 1", n)
		}
		if n := upstream.BreakerConsecutiveFailures(h); n != 0 {
			t.Errorf("a cut call counted against the breaker")
		}
	})
}

func TestLazyServer(t *testing.T) {
	for _, mode := range []string{"", upstream.LazyListStart, upstream.LazyListCached} {
		t.Run("lazyList="+mode, func(t *testing.T) {
			bubble(t, func(t *testing.T, f *fakeUpstream) {
				spec := fakeSpec("sleepy")
				spec.Lazy, spec.LazyList = true, mode
				h := newHandle(t, spec)
				h.Start()
				defer h.Close(context.Background())
				synctest.Wait()
				select {
				case <-h.FirstAttempt():
				default:
					t.Error("a lazy server holds up readiness")
				}
				if st := h.Status(); st.State != upstream.StateIdle || len(f.attemptTimes()) != 0 {
					t.Fatalf("lazy server started at Start: %+v", st)
				}
				if !h.Warm(context.Background()) {
					t.Error("Warm of an idle server reported nothing to do")
				}
				if mode == upstream.LazyListCached {
					if h.Catalog() != nil && h.Status().State == upstream.StateReady {
						// Possible but not required: the bubble ran it already.
						t.Log("cached Warm found the server ready")
					}
					synctest.Wait()
				}
				if st := h.Status(); st.State != upstream.StateReady || h.Catalog() == nil {
					t.Fatalf("after Warm: %+v", st)
				}
				if h.Warm(context.Background()) {
					t.Error("Warm of a ready server reported work")
				}
			})
		})
	}
	t.Run("first call starts it", func(t *testing.T) {
		bubble(t, func(t *testing.T, f *fakeUpstream) {
			spec := fakeSpec("oncall")
			spec.Lazy = true
			h := newHandle(t, spec)
			h.Start()
			defer h.Close(context.Background())
			if _, err := call(h, context.Background(), "echo"); err != nil {
				t.Fatalf("first call: %v", err)
			}
		})
	})
}
