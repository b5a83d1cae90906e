//go:build !race

package sanitize_test

const raceEnabled = false
