package main

import (
	"fmt"
	"math"
	"strings"
)

// The report of the stateless comparison: switchboard's 2026-07-28 path
// against its 2025-11-25 session path, with either load client.

// wireID is the scenario of the stateless comparison's switchboard at
// version label, called by the hand-written client.
func wireID(label string) string { return "sb-stdio-echo-wire-" + label }

// The stateless comparison with the hand-written client.
var (
	idWireLegacy    = wireID("2025-11-25")
	idWireStateless = wireID("2026-07-28")
	idWireBytes     = wireID("2025-11-25-bytes")
)

// pairedRatio is the median, over repetitions, of a's CPU per call over
// b's in the same repetition (at c, the two run a minute apart at most):
// a drift of the machine's speed over the run cancels out of each ratio,
// not out of a ratio of medians. NaN if no repetition measured both.
func (r *results) pairedRatio(a, b string, c int) float64 {
	ra, rb := r.runs[cellKey{a, c}], r.runs[cellKey{b, c}]
	var ratios []float64
	for i := range min(len(ra), len(rb)) {
		if x, y := ra[i].cpuPerCall(), rb[i].cpuPerCall(); y > 0 {
			ratios = append(ratios, x/y)
		}
	}
	return median(ratios)
}

// stateless renders the 2026-07-28 path against the 2025-11-25 one, with
// either client.
func (r *results) stateless(b *strings.Builder) {
	if r.scenario(idStateless) == nil {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## The 2026-07-28 stateless path against the 2025-11-25 session path\n\n")
	p("Both switchboard → echo fixture over stdio, wrap+policy, each its own process. The go-sdk load client leaves the protocol version to the SDK (2026-07-28: one POST per request, no session) or pins 2025-11-25. ")
	p("The wire client (e2e/bench/wire.go) sends the same requests as the go-sdk client, written by hand, and reads each answer as bytes: its cost is small and alike for both versions. ")
	p("\"client\" is the load client's own CPU per call (this process); on this machine's cores the client's work competes with switchboard's.\n\n")
	p("\"paired\" is the median of the ratios of each repetition's two runs (see pairedRatio), the estimate that drift does not move; \"ratio\" is of the medians.\n\n")
	p("| client | c | CPU µs/call 2026 | CPU µs/call 2025 | ratio | paired | client µs/call 2026 / 2025 | p50 ms 2026 | p50 ms 2025 | calls/s 2026 | calls/s 2025 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, pair := range []struct{ name, modern, legacy string }{{"go-sdk", idStateless, idLegacy}, {"wire", idWireStateless, idWireLegacy}} {
		for _, c := range r.opts.conc {
			a, l := r.summary(pair.modern, c), r.summary(pair.legacy, c)
			if a == nil || l == nil {
				continue
			}
			p("| %s | %d | %s | %s | %s | %s | %s / %s | %s | %s | %s | %s |\n", pair.name, c, num(a.cpu, "%.0f"), num(l.cpu, "%.0f"), ratio(a.cpu, l.cpu),
				num(r.pairedRatio(pair.modern, pair.legacy, c), "%.2f×"), num(a.client, "%.0f"), num(l.client, "%.0f"), num(a.p50, "%.3f"), num(l.p50, "%.3f"), num(a.rate, "%.0f"), num(l.rate, "%.0f"))
		}
	}
	p("\n")
	r.protocolBytes(b)
}

// protocolBytes splits the wire client's 2026-07-28 / 2025-11-25 ratio in
// two: what the bytes a 2026-07-28 request carries besides cost the
// session path, and the rest.
func (r *results) protocolBytes(b *strings.Builder) {
	if r.scenario(idWireBytes) == nil {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("### What the protocol's bytes cost\n\n")
	p("The wire client at 2025-11-25 sends, in a session, what a 2026-07-28 request carries besides: `_meta` with the protocol's version (naming 2025-11-25), the client's capabilities and info, and the `Mcp-Method` and `Mcp-Name` headers. ")
	p("\"bytes / 2025\" is what those bytes cost the session path: the part of the 2026-07-28 path's cost its wire format fixes. ")
	p("\"2026 / bytes\" is the rest: a 2026-07-28 request against a legacy one of the same bytes (a session of its own, the checks of the headers against the body, the server's info in every result).\n\n")
	p("| c | CPU µs/call 2025 | 2025 + bytes | 2026 | paired bytes / 2025 | paired 2026 / bytes | paired 2026 / 2025 |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range r.opts.conc {
		l, f, m := r.cpu(idWireLegacy, c), r.cpu(idWireBytes, c), r.cpu(idWireStateless, c)
		if math.IsNaN(l) || math.IsNaN(f) || math.IsNaN(m) {
			continue
		}
		p("| %d | %.0f | %.0f | %.0f | %s | %s | %s |\n", c, l, f, m, num(r.pairedRatio(idWireBytes, idWireLegacy, c), "%.2f×"),
			num(r.pairedRatio(idWireStateless, idWireBytes, c), "%.2f×"), num(r.pairedRatio(idWireStateless, idWireLegacy, c), "%.2f×"))
	}
	p("\n")
}
