package testutil

import (
	"testing"
	"time"
)

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
