// Package testutil holds what the end-to-end tests share across their
// packages (e2e, e2e/fixture, e2e/conformance): Eventually, the one way
// they wait for something a process does. Only tests import it.
//
// It repeats proxy/internal/testutil.Eventually, which e2e cannot import:
// that package is internal to proxy/, and e2e/ imports nothing of the
// module outside e2e/ (TestLayering).
package testutil
