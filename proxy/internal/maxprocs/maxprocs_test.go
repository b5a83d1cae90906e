package maxprocs

import (
	"runtime"
	"testing"
)

func TestSet(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(3)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	Set(getenv)
	if got := runtime.GOMAXPROCS(0); got != Default {
		t.Fatalf("GOMAXPROCS unset: runtime %d, want %d", got, Default)
	}

	// A value the environment gives is the runtime's, read at start; Set
	// leaves whatever is in effect.
	runtime.GOMAXPROCS(3)
	env["GOMAXPROCS"] = "3"
	Set(getenv)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS=3: runtime %d, want 3", got)
	}
}
