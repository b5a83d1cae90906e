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

	if got := Set(getenv); got != Default || runtime.GOMAXPROCS(0) != Default {
		t.Fatalf("GOMAXPROCS unset: Set = %d, runtime %d; want %d", got, runtime.GOMAXPROCS(0), Default)
	}

	// A value the environment gives is the runtime's, read at start; Set
	// leaves whatever is in effect.
	runtime.GOMAXPROCS(3)
	env["GOMAXPROCS"] = "3"
	if got := Set(getenv); got != 3 || runtime.GOMAXPROCS(0) != 3 {
		t.Fatalf("GOMAXPROCS=3: Set = %d, runtime %d; want 3", got, runtime.GOMAXPROCS(0))
	}
}
