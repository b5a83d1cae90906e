package maxprocs

import "runtime"

// Default is GOMAXPROCS for serve when the environment does not set it.
const Default = 1

// Set sets GOMAXPROCS to Default unless getenv("GOMAXPROCS") is set.
// Setting it also ends the runtime's own updates from the container's CPU
// limit, which Default is never above.
func Set(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(Default)
	}
}
