package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"text/tabwriter"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// callStats summarises one server's tool calls from /metrics.
type callStats struct {
	calls, errors float64
	bounds        []float64 // histogram upper bounds, seconds
	counts        []float64 // cumulative counts per bound
	total         float64
}

// quantile estimates q from the cumulative buckets by linear interpolation
// within the bucket that holds it (as Prometheus' histogram_quantile does).
func (s *callStats) quantile(q float64) float64 {
	if s.total == 0 || len(s.bounds) == 0 {
		return math.NaN()
	}
	rank := q * s.total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range s.bounds {
		if s.counts[i] >= rank {
			if math.IsInf(b, 1) {
				return prevBound
			}
			in := s.counts[i] - prevCount
			if in == 0 {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/in
		}
		prevBound, prevCount = b, s.counts[i]
	}
	return prevBound
}

// fetchCallStats reads the admin listener's /metrics and sums calls, errors
// and latency buckets per server.
func fetchCallStats(ctx context.Context, base string) (map[string]*callStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	stats := map[string]*callStats{}
	get := func(server string) *callStats {
		if stats[server] == nil {
			stats[server] = &callStats{}
		}
		return stats[server]
	}
	if f := fams["switchboard_tool_calls_total"]; f != nil {
		for _, m := range f.Metric {
			s := get(label(m, "server"))
			v := m.GetCounter().GetValue()
			s.calls += v
			if o := label(m, "outcome"); o != "ok" {
				s.errors += v
			}
		}
	}
	if f := fams["switchboard_tool_call_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			s := get(label(m, "server"))
			h := m.GetHistogram()
			s.total += float64(h.GetSampleCount())
			for i, b := range h.GetBucket() {
				if i >= len(s.bounds) {
					s.bounds = append(s.bounds, b.GetUpperBound())
					s.counts = append(s.counts, 0)
				}
				s.counts[i] += float64(b.GetCumulativeCount())
			}
		}
		for _, s := range stats {
			if len(s.bounds) > 0 && !math.IsInf(s.bounds[len(s.bounds)-1], 1) {
				s.bounds = append(s.bounds, math.Inf(1))
				s.counts = append(s.counts, s.total)
			}
		}
	}
	return stats, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func printCallStats(w io.Writer, stats map[string]*callStats) {
	if len(stats) == 0 {
		fmt.Fprintln(w, "\nno tool calls yet")
		return
	}
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tCALLS\tERRORS\tP50\tP99")
	for _, n := range names {
		s := stats[n]
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%s\n", n, s.calls, s.errors, ms(s.quantile(0.5)), ms(s.quantile(0.99)))
	}
	tw.Flush()
}

func ms(sec float64) string {
	if math.IsNaN(sec) {
		return "-"
	}
	v := sec * 1000
	if v >= 10 {
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}
