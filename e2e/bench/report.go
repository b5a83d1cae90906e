package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// cellKey names one scenario at one concurrency.
type cellKey struct {
	id string
	c  int
}

// results is everything one invocation measured.
type results struct {
	opts        *options
	machine     machine
	scenarios   []*scenario
	runs        map[cellKey][]runResult
	startup     startupResult
	upstreams   upstreamsResult
	sessions    sessionsResult
	sessionsCmp []sessionsResult // the same with each --compare environment
	peak        map[string]mem   // through scenarios, read at the end
	repsDone    int
	notes       []string
	took        time.Duration
}

func (r *results) add(sc *scenario, c int, run runResult) {
	k := cellKey{sc.id, c}
	r.runs[k] = append(r.runs[k], run)
}

// summary is one cell's medians over repetitions; latencies in ms.
type summary struct {
	reps, calls, errors int
	firstErr            string
	rate                float64
	p50, p90, p99       float64
	cpu                 float64 // µs per call
}

func (r *results) summary(id string, c int) *summary {
	runs := r.runs[cellKey{id, c}]
	if len(runs) == 0 {
		return nil
	}
	s := &summary{reps: len(runs)}
	var rate, p50, p90, p99, cpu []float64
	for _, run := range runs {
		s.calls += run.calls
		s.errors += run.errors
		if s.firstErr == "" {
			s.firstErr = run.firstErr
		}
		if run.calls == 0 {
			continue
		}
		rate = append(rate, run.rate())
		a, b, c := ms(percentile(run.lat, .50)), ms(percentile(run.lat, .90)), ms(percentile(run.lat, .99))
		p50, p90, p99 = append(p50, a), append(p90, b), append(p99, c)
		cpu = append(cpu, run.cpuPerCall())
	}
	s.rate, s.p50, s.p90, s.p99 = median(rate), median(p50), median(p90), median(p99)
	s.cpu = median(cpu)
	return s
}

func num(x float64, format string) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf(format, x)
}

func mib(kib int64) string {
	if kib <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}

// target is one line of the target table.
type target struct {
	what, goal string
	measured   string
	holds      string // "yes", "**no**" or "not measured"
}

func verdict(ok, measured bool) string {
	switch {
	case !measured:
		return "not measured"
	case ok:
		return "yes"
	}
	return "**no**"
}

func (r *results) targets() []target {
	var out []target
	const sb, direct = "sb-stdio-policy", "direct-stdio"

	// CPU per forwarded call, c ≥ 8: the worse of the measured concurrencies.
	var parts []string
	worst, seen := math.NaN(), false
	for _, c := range r.opts.conc {
		if s := r.summary(sb, c); c >= 8 && s != nil && !math.IsNaN(s.cpu) {
			parts = append(parts, fmt.Sprintf("%.0f µs (c=%d)", s.cpu, c))
			if !seen || s.cpu > worst {
				worst, seen = s.cpu, true
			}
		}
	}
	out = append(out, target{"switchboard CPU per forwarded tools/call (stdio upstream, c ≥ 8)", "≤ 60 µs",
		orDash(strings.Join(parts, ", ")), verdict(worst <= 60, seen)})

	t := target{what: "added p50 latency per hop, c = 1, HTTP downstream → stdio upstream", goal: "≤ 0.15 ms", measured: "–"}
	a, b := r.summary(sb, 1), r.summary(direct, 1)
	t.holds = verdict(false, false)
	if a != nil && b != nil {
		d := a.p50 - b.p50
		t.measured = fmt.Sprintf("%+.3f ms (%.3f − %.3f)", d, a.p50, b.p50)
		t.holds = verdict(d <= 0.15, true)
	}
	out = append(out, t)

	t = target{what: "calls/s through switchboard to a stdio upstream, c = 32", goal: "≥ 8000", measured: "–", holds: verdict(false, false)}
	if s := r.summary(sb, 32); s != nil {
		t.measured = num(s.rate, "%.0f")
		t.holds = verdict(s.rate >= 8000, true)
	}
	out = append(out, t)

	t = target{what: "p99 / p50 at c = 8 (switchboard → stdio, wrap+policy)", goal: "≤ 3", measured: "–", holds: verdict(false, false)}
	if s := r.summary(sb, 8); s != nil {
		t.measured = fmt.Sprintf("%.1f (%.3f / %.3f ms)", s.p99/s.p50, s.p99, s.p50)
		t.holds = verdict(s.p99/s.p50 <= 3, true)
	}
	out = append(out, t)

	t = target{what: fmt.Sprintf("RSS idle with %d upstreams (children excluded)", r.upstreams.n), goal: "≤ 15 MiB", measured: "–", holds: verdict(false, false)}
	if r.upstreams.mem.rss > 0 {
		t.measured = mib(r.upstreams.mem.rss)
		t.holds = verdict(r.upstreams.mem.rss <= 15*1024, true)
	}
	out = append(out, t)

	t = target{what: fmt.Sprintf("RSS with %d concurrent downstream sessions", r.sessions.n), goal: "≤ 150 MiB", measured: "–", holds: verdict(false, false)}
	if r.sessions.held.rss > 0 {
		t.measured = mib(r.sessions.held.rss)
		t.holds = verdict(r.sessions.held.rss <= 150*1024 && r.sessions.err == "", true)
	}
	if r.sessions.n == 0 {
		t.what = "RSS with 1000 concurrent downstream sessions"
	}
	out = append(out, t)

	t = target{what: "tools/list answered after launch, HTTP upstream", goal: "≤ 30 ms", measured: "–", holds: verdict(false, false)}
	if m := median(r.startup.toList); !math.IsNaN(m) {
		t.measured = fmt.Sprintf("%.1f ms (median of %d)", m, len(r.startup.toList))
		t.holds = verdict(m <= 30, true)
	}
	out = append(out, t)
	return out
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// markdown renders the whole report.
func (r *results) markdown() string {
	var b strings.Builder
	r.header(&b)
	r.callTable(&b)
	r.memoryTable(&b)
	r.startupAndScale(&b)
	r.ratios(&b)
	r.targetTable(&b)
	return b.String()
}

// header renders the title, the machine and the run, and the notes.
func (r *results) header(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	m := r.machine
	p("# switchboard benchmark\n\n")
	p("Machine: `nproc` %d, GOMAXPROCS %d, %s, %s, kernel %s. Load average (1/5/15 min) %s at start, %s at end. %s.\n\n",
		m.nproc, m.gomaxprocs, m.goVersion, m.cpu, m.kernel, m.loadStart, m.loadEnd, m.date.UTC().Format("2006-01-02 15:04 MST"))
	p("Run: %d of %d repetitions × %d calls per scenario and concurrency (c = %s), medians over repetitions, scenarios interleaved; %s in all",
		r.repsDone, r.opts.reps, r.opts.calls, joinInts(r.opts.conc), r.took.Round(time.Second))
	if len(r.opts.sbEnv) > 0 {
		p("; switchboard environment %s", strings.Join(r.opts.sbEnv, " "))
	}
	p(".\n\n")
	for _, n := range r.notes {
		p("**Note:** %s\n\n", n)
	}
}

// callTable renders the tool call measurements, one row per scenario and
// concurrency.
func (r *results) callTable(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Tool calls\n\n")
	p("| scenario | c | calls/s | p50 ms | p90 ms | p99 ms | CPU µs/call | errors | reps |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, sc := range r.scenarios {
		for _, c := range r.opts.conc {
			s := r.summary(sc.id, c)
			if s == nil {
				continue
			}
			errs := "0"
			if s.errors > 0 {
				errs = fmt.Sprintf("**%d** (%.80s)", s.errors, s.firstErr)
			}
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %d |\n", sc.name, c, num(s.rate, "%.0f"),
				num(s.p50, "%.3f"), num(s.p90, "%.3f"), num(s.p99, "%.3f"), num(s.cpu, "%.0f"), errs, s.reps)
		}
	}
	p("\nCPU µs/call is user + system time of one process over the timed calls divided by the calls: switchboard for the switchboard rows, the echo server for the direct rows. ")
	p("c is the number of concurrent workers: one session each over HTTP, one shared session over stdio.\n\n")
}

// memoryTable renders the memory of each switchboard scenario and the
// protocol it spoke upstream.
func (r *results) memoryTable(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Switchboard memory and upstream protocol\n\n")
	p("| scenario | upstream protocol | RSS idle | RSS peak (VmHWM) |\n|---|---|---:|---:|\n")
	for _, sc := range r.scenarios {
		if !sc.through {
			continue
		}
		p("| %s | %s | %s | %s |\n", sc.name, orDash(sc.protocol), mib(sc.idleRSS), mib(r.peak[sc.id].hwm))
	}
	p("\n")
}

// startupAndScale renders start-up time, and memory with many upstreams
// and with many sessions.
func (r *results) startupAndScale(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Start-up, many upstreams, many sessions\n\n")
	if st := r.startup; len(st.toList) > 0 {
		lo, hi := minMax(st.toList)
		p("- Start-up to the first tools/list listing an HTTP upstream's tool: median **%.1f ms** (%.1f–%.1f, %d launches); the ready file appeared after a median %.1f ms.\n",
			median(st.toList), lo, hi, len(st.toList), median(st.ready))
	}
	if st := r.startup; len(st.pinned) > 0 {
		lo, hi := minMax(st.pinned)
		p("- The same with the upstream's `protocol` pinned to %s (no 2026-07-28 discover attempt first): median %.1f ms (%.1f–%.1f).\n",
			protocolVersion, median(st.pinned), lo, hi)
	}
	if st := r.startup; len(st.floor) > 0 {
		p("- Floor: `switchboard version` (exec, runtime and package initialisation, nothing else) runs in a median %.1f ms and peaks at %s RSS.\n",
			median(st.floor), mib(st.floorRSS))
	}
	if r.startup.err != "" {
		p("- Start-up measurement failed: %s\n", firstLine(r.startup.err))
	}
	if u := r.upstreams; u.mem.rss > 0 {
		p("- RSS idle with %d stdio upstreams, children excluded: **%s** (VmHWM %s): %s anonymous (heap, stacks), %s file-backed (pages of the mapped binary).\n",
			u.n, mib(u.mem.rss), mib(u.mem.hwm), mib(u.mem.anon), mib(u.mem.file))
	}
	if r.upstreams.err != "" {
		p("- %d-upstream measurement failed: %s\n", r.upstreams.n, firstLine(r.upstreams.err))
	}
	switch s := r.sessions; {
	case s.skipped != "":
		p("- %s\n", s.skipped)
	case s.held.rss > 0:
		p("- RSS holding %d idle downstream sessions: **%s**, %s of it anonymous (idle before %s, ≈ %.1f KiB per session; VmHWM %s; /status counted %d sessions; opened in %.1f s).\n",
			s.n, mib(s.held.rss), mib(s.held.anon), mib(s.idle.rss), float64(s.held.rss-s.idle.rss)/float64(s.n), mib(s.held.hwm), s.reported, s.openTime.Seconds())
	}
	if r.sessions.err != "" {
		p("- Session measurement: %s\n", firstLine(r.sessions.err))
	}
	p("\n")
}

// targetTable renders the targets and whether the measurements meet them.
func (r *results) targetTable(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Targets\n\n| target | goal | measured | holds |\n|---|---|---|---|\n")
	for _, t := range r.targets() {
		p("| %s | %s | %s | %s |\n", t.what, t.goal, t.measured, t.holds)
	}
}

// ratios renders the comparisons against the direct connection.
func (r *results) ratios(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	ups := []string{"stdio", "http"}
	p("## Ratios against the direct connection\n\n")
	p("| | stdio upstream | HTTP upstream |\n|---|---:|---:|\n")
	for _, v := range []struct{ suffix, label string }{{"policy", "wrap+policy"}, {"plain", "plain"}} {
		row := []string{}
		for _, up := range ups {
			a, d := r.summary("sb-"+up+"-"+v.suffix, 1), r.summary("direct-"+up, 1)
			if a == nil || d == nil {
				row = append(row, "–")
				continue
			}
			row = append(row, fmt.Sprintf("%+.3f ms", a.p50-d.p50))
		}
		p("| added p50 per hop, c = 1, %s | %s |\n", v.label, strings.Join(row, " | "))
	}
	top := r.opts.conc[len(r.opts.conc)-1]
	for _, v := range []struct{ suffix, label string }{{"policy", "wrap+policy"}, {"plain", "plain"}} {
		row := []string{}
		for _, up := range ups {
			a, d := r.summary("sb-"+up+"-"+v.suffix, top), r.summary("direct-"+up, top)
			if a == nil || d == nil {
				row = append(row, "–")
				continue
			}
			row = append(row, fmt.Sprintf("%.2f (%.0f / %.0f)", a.rate/d.rate, a.rate, d.rate))
		}
		p("| through / direct calls/s, c = %d, %s | %s |\n", top, v.label, strings.Join(row, " | "))
	}
	for _, v := range []struct{ prefix, label string }{{"direct-", "direct"}, {"sb-%s-policy", "through, wrap+policy"}, {"sb-%s-plain", "through, plain"}} {
		row := []string{}
		for _, up := range ups {
			id := v.prefix + up
			if strings.Contains(v.prefix, "%s") {
				id = fmt.Sprintf(v.prefix, up)
			}
			s := r.summary(id, 8)
			if s == nil {
				row = append(row, "–")
				continue
			}
			row = append(row, fmt.Sprintf("%.1f", s.p99/s.p50))
		}
		p("| p99 / p50, c = 8, %s | %s |\n", v.label, strings.Join(row, " | "))
	}
	for _, c := range r.opts.conc {
		for _, v := range []struct{ suffix, label string }{{"policy", "wrap+policy"}, {"plain", "plain"}} {
			row := []string{}
			for _, up := range ups {
				s, d := r.summary("sb-"+up+"-"+v.suffix, c), r.summary("direct-"+up, c)
				if s == nil {
					row = append(row, "–")
					continue
				}
				cell := num(s.cpu, "%.0f µs")
				if d != nil && !math.IsNaN(d.cpu) && d.cpu > 0 {
					cell += fmt.Sprintf(" (%.1f× the echo server's)", s.cpu/d.cpu)
				}
				row = append(row, cell)
			}
			p("| switchboard CPU per call, c = %d, %s | %s |\n", c, v.label, strings.Join(row, " | "))
		}
	}
	p("\nAdded p50 is the through median minus the direct median. p99 / p50 here is the ratio of the medians; the target row below uses the same.\n\n")
	r.comparison(b)
}

// comparison renders, for each --compare environment, the same-run
// comparison of switchboard with serve's defaults against it.
func (r *results) comparison(b *strings.Builder) {
	for i := range r.opts.compare {
		var cmp *scenario
		for _, sc := range r.scenarios {
			if sc.id == compareID(i) {
				cmp = sc
			}
		}
		if cmp == nil {
			continue
		}
		var sessions sessionsResult
		if i < len(r.sessionsCmp) {
			sessions = r.sessionsCmp[i]
		}
		r.compareOne(b, cmp, sessions)
	}
}

func (r *results) compareOne(b *strings.Builder, cmp *scenario, sessions sessionsResult) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	with := strings.Join(cmp.env, " ")
	def := "serve's defaults"
	if len(r.opts.sbEnv) > 0 {
		def = strings.Join(r.opts.sbEnv, " ")
	}
	p("## Switchboard with %s, same run\n\n", with)
	p("switchboard → stdio, wrap+policy, two processes side by side: one with %s, one with %s added.\n\n", def, with)
	p("| c | CPU µs/call | | p50 ms | | p99 ms | | calls/s | |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	p("| | %s | %s | %s | %s | %s | %s | %s | %s |\n", def, with, def, with, def, with, def, with)
	for _, c := range r.opts.conc {
		a, x := r.summary("sb-stdio-policy", c), r.summary(cmp.id, c)
		if a == nil || x == nil {
			continue
		}
		p("| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, num(a.cpu, "%.0f"), num(x.cpu, "%.0f"),
			num(a.p50, "%.3f"), num(x.p50, "%.3f"), num(a.p99, "%.3f"), num(x.p99, "%.3f"), num(a.rate, "%.0f"), num(x.rate, "%.0f"))
	}
	p("\nIdle RSS: %s with %s, %s with %s. Peak (VmHWM): %s and %s.",
		mib(r.scenarioIdle("sb-stdio-policy")), def, mib(cmp.idleRSS), with, mib(r.peak["sb-stdio-policy"].hwm), mib(r.peak[cmp.id].hwm))
	if a, x := r.sessions, sessions; a.held.rss > 0 && x.held.rss > 0 {
		p(" Holding %d idle sessions: %s with %s, %s with %s.", a.n, mib(a.held.rss), def, mib(x.held.rss), with)
	}
	p("\n\n")
}

func (r *results) scenarioIdle(id string) int64 {
	for _, sc := range r.scenarios {
		if sc.id == id {
			return sc.idleRSS
		}
	}
	return 0
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func minMax(xs []float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
