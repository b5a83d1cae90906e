package maxprocs

import "runtime"

// Default is GOMAXPROCS for serve when the environment does not set it.
const Default = 1

// Set sets GOMAXPROCS to Default unless getenv("GOMAXPROCS") is set, and
// returns the value in effect. Setting it also ends the runtime's own
// updates from the container's CPU limit, which Default is never above.
func Set(getenv func(string) string) int {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(Default)
	}
	return runtime.GOMAXPROCS(0)
}
