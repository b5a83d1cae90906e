package proxy

import "testing"

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, DefaultGOGC},
		{4 << 20, DefaultGOGC},  // a sidecar: 16 MiB of headroom
		{16 << 20, DefaultGOGC}, // exactly the cap
		{32 << 20, 200},         // headroom held at 64 MiB
		{64 << 20, 100},         // Go's default from here on
		{1 << 30, 100},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}
