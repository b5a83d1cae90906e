package upstream_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// A lazy server with an idle timeout (#17) stops once nothing used it for
// that long and starts again on the next call.

func lazyIdleSpec(idle time.Duration) upstream.Spec {
	spec := fakeSpec("napper")
	spec.Lazy, spec.IdleTimeout = true, idle
	return spec
}

func wantState(t *testing.T, h *upstream.Handle, what string, want upstream.State) {
	t.Helper()
	synctest.Wait()
	if st := h.Status(); st.State != want {
		t.Fatalf("%s: %s, want %s (%+v)", what, st.State, want, st)
	}
}

func TestLazyIdleTimeout(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, lazyIdleSpec(10*time.Second))
		h.Start()
		defer h.Close(context.Background())
		if _, err := call(h, context.Background(), "echo"); err != nil {
			t.Fatalf("first call: %v", err)
		}
		// A call restarts the clock.
		time.Sleep(9 * time.Second)
		if _, err := call(h, context.Background(), "echo"); err != nil {
			t.Fatalf("second call: %v", err)
		}
		time.Sleep(10*time.Second - time.Nanosecond)
		wantState(t, h, "just before the idle timeout", upstream.StateReady)
		time.Sleep(time.Nanosecond)
		wantState(t, h, "idle timeout after the last call", upstream.StateIdle)
		if h.Catalog() == nil {
			t.Error("an idle server's tools left the list")
		}
		// A listing does not start it again: its tools are listed already.
		if h.Warm(context.Background()) {
			t.Error("Warm of a server stopped for idleness reported work")
		}
		wantState(t, h, "after Warm", upstream.StateIdle)
		if h.Restart() {
			t.Error("Restart started an idle server")
		}
		if n := len(f.attemptTimes()); n != 1 {
			t.Fatalf("%d starts, want 1", n)
		}
		// The next call starts it again.
		if _, err := call(h, context.Background(), "echo"); err != nil {
			t.Fatalf("call after the idle stop: %v", err)
		}
		if n := len(f.attemptTimes()); n != 2 {
			t.Errorf("%d starts, want 2", n)
		}
		wantState(t, h, "after the call", upstream.StateReady)
		time.Sleep(10 * time.Second)
		wantState(t, h, "idle again", upstream.StateIdle)
	})
}

func TestLazyIdleTimeoutWaitsForCallsInFlight(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, lazyIdleSpec(time.Second))
		h.Start()
		defer h.Close(context.Background())
		start := time.Now()
		res, err := call(h, context.Background(), "sleep") // 2 s
		if err != nil || res.IsError {
			t.Fatalf("slow call: %v %v", res, err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("slow call took %s", d)
		}
		wantState(t, h, "as the call ends", upstream.StateReady)
		time.Sleep(time.Second)
		wantState(t, h, "a second after the call ended", upstream.StateIdle)
	})
}

func TestLazyIdleTimeoutReload(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, lazyIdleSpec(10*time.Second))
		h.Start()
		defer h.Close(context.Background())
		if _, err := call(h, context.Background(), "echo"); err != nil {
			t.Fatal(err)
		}
		// Off: it runs on.
		if err := h.Update(lazyIdleSpec(0)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		wantState(t, h, "without an idle timeout", upstream.StateReady)
		// On again, shorter than the time it has been idle: it stops now.
		if err := h.Update(lazyIdleSpec(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		wantState(t, h, "after the idle timeout was set", upstream.StateIdle)
		if _, err := call(h, context.Background(), "echo"); err != nil {
			t.Fatal(err)
		}
		// Longer: the clock follows the new value.
		if err := h.Update(lazyIdleSpec(20 * time.Second)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(19 * time.Second)
		wantState(t, h, "within the new idle timeout", upstream.StateReady)
		time.Sleep(time.Second)
		wantState(t, h, "at the new idle timeout", upstream.StateIdle)
	})
}

// TestLazyIdleStopRacesCalls: calls that arrive at the very moment the idle
// timeout passes either keep the session or start a new one; none fails.
func TestLazyIdleStopRacesCalls(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, lazyIdleSpec(time.Second))
		h.Start()
		defer h.Close(context.Background())
		errs := make(chan error, 100)
		for range 4 {
			go func() {
				for range 20 {
					if _, err := call(h, context.Background(), "echo"); err != nil {
						errs <- err
					}
					time.Sleep(time.Second) // lands on the idle timeout of the last call
				}
			}()
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("call: %v", err)
		}
		wantState(t, h, "after the calls", upstream.StateIdle)
		t.Logf("%d starts for 80 calls", len(f.attemptTimes()))
	})
}

// TestCallsRacingSessionChangesDoNotWait: calls that race a lazy server's
// start (its session being set) or its idle stop (its session being
// withdrawn) get a session the moment there is one. The fake upstream
// answers at once, so every call takes no time at all on the bubble's
// clock: a call that polled for the session would take a tick.
func TestCallsRacingSessionChangesDoNotWait(t *testing.T) {
	for range 20 {
		bubble(t, func(t *testing.T, f *fakeUpstream) {
			h := newHandle(t, lazyIdleSpec(time.Second))
			h.Start()
			defer h.Close(context.Background())
			const callers, rounds = 8, 5
			errs := make(chan error, callers*rounds)
			slow := make(chan time.Duration, callers*rounds)
			for range callers {
				go func() {
					for range rounds {
						start := time.Now()
						if _, err := call(h, context.Background(), "echo"); err != nil {
							errs <- err
						}
						if d := time.Since(start); d != 0 {
							slow <- d
						}
						time.Sleep(time.Second) // lands on the idle timeout of the last call
					}
				}()
			}
			time.Sleep(time.Minute)
			synctest.Wait()
			close(errs)
			close(slow)
			for err := range errs {
				t.Errorf("call: %v", err)
			}
			for d := range slow {
				t.Errorf("a call waited %s for the session", d)
			}
		})
	}
}
