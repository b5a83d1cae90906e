//go:build race

package e2e

// raceEnabled builds the binaries under test with -race when the tests run
// with -race, so the binaries' own races are caught too.
const raceEnabled = true
