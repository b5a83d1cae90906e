// Package testutil holds what the tests below proxy/ share: a logger into
// the test's log, a check that a test leaves no goroutine behind, and
// Eventually, the one way they wait for something another goroutine does.
// Only tests import it.
package testutil
