package main

import (
	"math"
	"testing"
)

func TestCallStatsQuantile(t *testing.T) {
	s := &callStats{
		bounds: []float64{0.001, 0.01, 0.1, math.Inf(1)},
		counts: []float64{50, 90, 100, 100},
		total:  100,
	}
	if got := s.quantile(0.5); math.Abs(got-0.001) > 1e-9 {
		t.Errorf("p50 = %v, want 0.001", got)
	}
	if got := s.quantile(0.99); math.Abs(got-(0.01+0.09*0.9)) > 1e-9 {
		t.Errorf("p99 = %v", got)
	}
	if got := (&callStats{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty quantile = %v", got)
	}
}

func TestMillis(t *testing.T) {
	for _, c := range []struct {
		sec  float64
		want string
	}{
		{0.0029, "2.9ms"},
		{0.005, "5.0ms"},
		{0.0125, "12ms"},
		{2, "2000ms"},
		{math.NaN(), "-"},
	} {
		if got := ms(c.sec); got != c.want {
			t.Errorf("ms(%v) = %q, want %q", c.sec, got, c.want)
		}
	}
}
