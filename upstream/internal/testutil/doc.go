// Package testutil holds what upstream's tests, internal and external,
// share: Eventually, the one way they wait for something another goroutine
// or a child process does. Only tests import it.
//
// It repeats proxy/internal/testutil.Eventually, which a leaf cannot
// import: that package is internal to proxy/, and a leaf imports nothing
// of the module outside itself (STYLE §2, TestLayering).
package testutil
