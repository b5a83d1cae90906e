package main

import (
	"fmt"
	"math"
	"strings"
)

// peerTargets are issue 40's targets: switchboard against the peer,
// TBXark/mcp-proxy, in the same run, with wrapping and policy on.
func (r *results) peerTargets() []target {
	var out []target
	row := func(what, goal string, sb, pe float64, format string, ok func(sb, pe float64) bool) {
		t := target{what: what, goal: goal, sb: num(sb, format), peer: num(pe, format), vsPeer: ratio(sb, pe)}
		t.holds = verdict(!math.IsNaN(sb) && !math.IsNaN(pe) && ok(sb, pe), !math.IsNaN(sb) && !math.IsNaN(pe))
		out = append(out, t)
	}
	atMost := func(k float64) func(sb, pe float64) bool { return func(sb, pe float64) bool { return sb <= k*pe } }
	for _, c := range []struct {
		id    string
		label string
		conc  int
	}{{idSBStdio, "stdio upstream (server-everything)", 8}, {idSBStdio, "stdio upstream (server-everything)", 32}, {idSBHTTP, "HTTP upstream (go-sdk echo)", 8}} {
		pe := idPeerStdio
		if c.id == idSBHTTP {
			pe = idPeerHTTP
		}
		row(fmt.Sprintf("CPU per call, %s, c = %d", c.label, c.conc), "≤ 0.8× the peer's", r.cpu(c.id, c.conc), r.cpu(pe, c.conc), "%.0f µs", atMost(0.8))
	}
	for _, p := range [][2]string{{idSBStdio, idPeerStdio}, {idSBHTTP, idPeerHTTP}} {
		label := "stdio upstream (server-everything)"
		if p[0] == idSBHTTP {
			label = "HTTP upstream (go-sdk echo)"
		}
		row(fmt.Sprintf("throughput, %s, c = 32", label), "≥ the peer's", r.rate(p[0], 32), r.rate(p[1], 32), "%.0f calls/s",
			func(sb, pe float64) bool { return sb >= pe })
	}
	for _, p := range [][3]string{{idSBHTTP, idPeerHTTP, idDirectHTTP}, {idSBStdio, idPeerStdio, idDirectStdio}} {
		label := "HTTP upstream (go-sdk echo)"
		if p[0] == idSBStdio {
			label = "stdio upstream (server-everything)"
		}
		d := r.p50(p[2], 1)
		row(fmt.Sprintf("added p50 at c = 1, %s, over a direct call", label), "≤ the peer's", r.p50(p[0], 1)-d, r.p50(p[1], 1)-d, "%+.3f ms", atMost(1))
	}
	t := target{what: "RSS peak (VmHWM) after the load, switchboard → server-everything", goal: "≤ 1.5× the peer's", sb: "–", peer: "–", vsPeer: "–", holds: verdict(false, false)}
	if sb, pe := r.peak[idSBStdio].hwm, r.peak[idPeerStdio].hwm; sb > 0 && pe > 0 {
		t.sb, t.peer, t.vsPeer = mib(sb), mib(pe), ratio(float64(sb), float64(pe))
		t.holds = verdict(float64(sb) <= 1.5*float64(pe), true)
	}
	return append(out, t)
}

// rate is a cell's median calls per second, NaN if not measured.
func (r *results) rate(id string, c int) float64 {
	if s := r.summary(id, c); s != nil {
		return s.rate
	}
	return math.NaN()
}

// peerTable renders issue 40's targets.
func (r *results) peerTable(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Targets against the peer (issue 40)\n\n")
	p("| metric | target | switchboard | peer | switchboard / peer | holds |\n|---|---|---|---|---|---|\n")
	for _, t := range r.peerTargets() {
		p("| %s | %s | %s | %s | %s | %s |\n", t.what, t.goal, t.sb, t.peer, t.vsPeer, t.holds)
	}
	p("\nThe peer is TBXark/mcp-proxy; switchboard runs as shipped, with wrapping and policy on. CPU is the proxy process's own (all its threads' time on a CPU, by the scheduler's count), children excluded; added p50 is the median through minus the median direct; the peak is VmHWM read after every load step.\n\n")
}
