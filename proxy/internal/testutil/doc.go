// Package testutil holds what the tests of the session layer and the
// downstream transports share: a logger into the test's log, and a check
// that a test leaves no goroutine behind. Only tests import it.
package testutil
