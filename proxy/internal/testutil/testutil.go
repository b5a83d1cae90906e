package testutil

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Logger sends a test's log lines, at debug and above, to t.Log under
// name, and drops those that come after the test ended.
func Logger(t *testing.T, name string) hclog.Logger {
	w := &logWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Debug, Output: w})
}

type logWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// CheckGoroutines fails tb if, within wait after it ends, more goroutines
// run than when it was called: goroutines end a little after they are
// released, so the count is polled until the deadline.
func CheckGoroutines(tb testing.TB, wait time.Duration) {
	tb.Helper()
	before := runtime.NumGoroutine()
	tb.Cleanup(func() {
		deadline := time.Now().Add(wait)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				tb.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// poll is how often Eventually checks its condition.
const poll = 10 * time.Millisecond

// Eventually checks cond every 10 ms until it holds, and fails tb if it
// still does not after timeout: "timed out after <timeout> waiting for
// <what>", so what names what was awaited. Like tb.Fatal, it must be
// called from the test's goroutine.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(poll)
	}
}
