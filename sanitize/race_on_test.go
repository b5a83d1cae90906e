//go:build race

package sanitize_test

// raceEnabled is true when the race detector is on; timing tests skip then.
const raceEnabled = true
