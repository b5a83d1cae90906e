package proxy

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
