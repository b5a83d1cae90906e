package main

import (
	"fmt"
	"math"
	"slices"
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
	everything  string // server-everything's version; "" if not found
	sizes       []binSize
	scenarios   []*scenario
	runs        map[cellKey][]runResult
	startup     startupResult
	upstreams   upstreamsResult
	sessions    sessionsResult
	sessionsCmp []sessionsResult    // the same with each --compare environment
	peak        map[string]mem      // switchboard and peer scenarios, read after the load
	resident    map[string]resident // switchboard and the peer → server-everything, after the load
	initHeap    map[string]initHeap // the same two binaries' package initialisation
	perf        []perfResult
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
	client              float64 // the load client's CPU µs per call
}

func (r *results) summary(id string, c int) *summary {
	runs := r.runs[cellKey{id, c}]
	if len(runs) == 0 {
		return nil
	}
	s := &summary{reps: len(runs)}
	var rate, p50, p90, p99, cpu, client []float64
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
		client = append(client, run.clientPerCall())
	}
	s.rate, s.p50, s.p90, s.p99 = median(rate), median(p50), median(p90), median(p99)
	s.cpu, s.client = median(cpu), median(client)
	return s
}

// cpu is a cell's CPU µs per call, NaN if not measured.
func (r *results) cpu(id string, c int) float64 {
	if s := r.summary(id, c); s != nil {
		return s.cpu
	}
	return math.NaN()
}

// p50 is a cell's median latency in ms, NaN if not measured.
func (r *results) p50(id string, c int) float64 {
	if s := r.summary(id, c); s != nil {
		return s.p50
	}
	return math.NaN()
}

// tail is a cell's p99 / p50, NaN if not measured.
func (r *results) tail(id string, c int) float64 {
	if s := r.summary(id, c); s != nil && s.p50 > 0 {
		return s.p99 / s.p50
	}
	return math.NaN()
}

func (r *results) scenario(id string) *scenario {
	for _, sc := range r.scenarios {
		if sc.id == id {
			return sc
		}
	}
	return nil
}

func (r *results) hasConc(c int) bool {
	for _, x := range r.opts.conc {
		if x == c {
			return true
		}
	}
	return false
}

func (r *results) topConc() int { return r.opts.conc[len(r.opts.conc)-1] }

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

func mb(bytes int64) string {
	if bytes <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MB", float64(bytes)/1e6)
}

// ratio formats a / b, or "–" when either is missing.
func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// markdown renders the whole report.
func (r *results) markdown() string {
	var b strings.Builder
	r.header(&b)
	r.peerTable(&b)
	r.targetTable(&b)
	r.callTable(&b)
	r.perCall(&b)
	r.stateless(&b)
	r.memoryTable(&b)
	r.memoryMadeOf(&b)
	r.startupAndScale(&b)
	r.comparison(&b)
	r.profiles(&b)
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
	p(".")
	if m.source != "" {
		p(" Built from %s.", m.source)
	}
	p("\n\n")
	up := "server-everything not found (see the note)"
	if r.everything != "" {
		up = "@modelcontextprotocol/server-everything " + r.everything + " on Node 22 (tool `echo {message}`)"
	}
	p("Upstreams: stdio: %s; HTTP: the go-sdk echo fixture (`e2e/fixture`, tool `echo {text}`), which also serves the 2026-07-28 comparison over stdio. ", up)
	sb, peer := recipes(r.opts.build)
	p("switchboard is built %s. The peer is TBXark/mcp-proxy (on mark3labs/mcp-go), built from its source in the same run %s, and runs with its defaults and logging off.\n\n", sb.what, peer.what)
	for _, n := range r.notes {
		p("**Note:** %s\n\n", n)
	}
}

// target is one row of issue 20's target table.
type target struct {
	what, goal   string
	sb, sbRatio  string // switchboard's value and its same-run ratio
	peer, vsPeer string // the peer's value and switchboard / peer
	holds        string // "yes", "**no**" or "not measured"
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

// targets are the rows of issue 20's target table.
func (r *results) targets() []target {
	return slices.Concat(r.cpuTargets(), r.latencyTargets(), r.memoryTargets(), r.otherTargets())
}

// cpuTargets are the CPU-per-call rows.
func (r *results) cpuTargets() []target {
	var out []target
	for _, c := range []int{8, 32} {
		t := target{what: fmt.Sprintf("switchboard CPU per forwarded call, stdio upstream (server-everything), c = %d, wrap+policy", c),
			goal: "≤ 60 µs and ≤ 0.5× the upstream's own", sb: "–", sbRatio: "–", peer: "–", vsPeer: "–", holds: verdict(false, false)}
		if !r.hasConc(c) {
			t.holds = fmt.Sprintf("not measured (c = %d not run)", c)
			out = append(out, t)
			continue
		}
		sb, up, pe := r.cpu(idSBStdio, c), r.cpu(idDirectStdio, c), r.cpu(idPeerStdio, c)
		t.sb, t.peer = num(sb, "%.0f µs"), num(pe, "%.0f µs")
		if !math.IsNaN(up) {
			t.sbRatio = fmt.Sprintf("%s the upstream's %.0f µs", ratio(sb, up), up)
		}
		t.vsPeer = ratio(sb, pe)
		t.holds = verdict(sb <= 60 && sb/up <= 0.5, !math.IsNaN(sb) && !math.IsNaN(up))
		out = append(out, t)
	}

	t := target{what: "switchboard CPU per forwarded call, HTTP upstream (go-sdk echo), c = 8, wrap+policy", goal: "≤ 150 µs",
		sb: "–", sbRatio: "–", peer: "–", vsPeer: "–"}
	sb, up, pe := r.cpu(idSBHTTP, 8), r.cpu(idDirectHTTP, 8), r.cpu(idPeerHTTP, 8)
	t.sb, t.peer, t.vsPeer = num(sb, "%.0f µs"), num(pe, "%.0f µs"), ratio(sb, pe)
	if !math.IsNaN(up) {
		t.sbRatio = fmt.Sprintf("%s the upstream's %.0f µs", ratio(sb, up), up)
	}
	t.holds = verdict(sb <= 150, !math.IsNaN(sb))
	out = append(out, t)

	return out
}

// latencyTargets are the added-latency and tail rows.
func (r *results) latencyTargets() []target {
	var out []target
	t := target{what: "added p50 at c = 1, HTTP downstream → stdio upstream (server-everything), over a direct call", goal: "≤ 0.15 ms",
		sb: "–", sbRatio: "–", peer: "–", vsPeer: "–"}
	d := r.p50(idDirectStdio, 1)
	sbAdd, peAdd := r.p50(idSBStdio, 1)-d, r.p50(idPeerStdio, 1)-d
	t.sb, t.peer = num(sbAdd, "%+.3f ms"), num(peAdd, "%+.3f ms")
	if !math.IsNaN(sbAdd) {
		t.sbRatio = fmt.Sprintf("p50 %.3f ms = %s direct's %.3f ms", r.p50(idSBStdio, 1), ratio(r.p50(idSBStdio, 1), d), d)
	}
	t.vsPeer = ratio(sbAdd, peAdd)
	t.holds = verdict(sbAdd <= 0.15, !math.IsNaN(sbAdd))
	out = append(out, t)

	t = target{what: "p99 / p50 at c = 8, switchboard → server-everything", goal: "≤ 3", sb: "–", sbRatio: "–", peer: "–", vsPeer: "–"}
	tl := r.tail(idSBStdio, 8)
	t.sb, t.peer = num(tl, "%.1f"), num(r.tail(idPeerStdio, 8), "%.1f")
	if s := r.summary(idSBStdio, 8); s != nil {
		t.sbRatio = fmt.Sprintf("%.3f / %.3f ms; direct's %s", s.p99, s.p50, num(r.tail(idDirectStdio, 8), "%.1f"))
	}
	t.vsPeer = ratio(tl, r.tail(idPeerStdio, 8))
	t.holds = verdict(tl <= 3, !math.IsNaN(tl))
	out = append(out, t)

	return out
}

// memoryTargets are the RSS rows.
func (r *results) memoryTargets() []target {
	var out []target
	t := target{what: fmt.Sprintf("RSS idle with %d upstreams (children excluded)", r.upstreams.n), goal: "≤ 20 MiB",
		sb: "–", sbRatio: "–", peer: "–", vsPeer: "–", holds: verdict(false, false)}
	if u := r.upstreams.mem; u.rss > 0 {
		t.sb = mib(u.rss)
		t.sbRatio = fmt.Sprintf("%s anonymous + %s file-backed", mib(u.anon), mib(u.file))
		t.holds = verdict(u.rss <= 20*1024, true)
	}
	out = append(out, t)

	top := r.topConc()
	t = target{what: fmt.Sprintf("RSS peak (VmHWM) at c = %d, switchboard → server-everything", top), goal: "≤ 25 MiB (at c = 32)",
		sb: "–", sbRatio: "–", peer: "–", vsPeer: "–", holds: verdict(false, false)}
	if m := r.peak[idSBStdio]; m.hwm > 0 {
		t.sb, t.sbRatio = mib(m.hwm), "idle "+mib(r.idle(idSBStdio))
		t.holds = verdict(m.hwm <= 25*1024, true)
		if top < 32 {
			t.holds = "not measured (c = 32 not run)"
		}
	}
	if m := r.peak[idPeerStdio]; m.hwm > 0 {
		t.peer = mib(m.hwm)
		t.vsPeer = ratio(float64(r.peak[idSBStdio].hwm), float64(m.hwm))
	}
	out = append(out, t)

	t = target{what: "RSS holding 1000 idle sessions", goal: "≤ 60 MiB", sb: "–", sbRatio: "–", peer: "– (keeps no sessions)", vsPeer: "–", holds: verdict(false, false)}
	if s := r.sessions; s.held.rss > 0 {
		t.sb = mib(s.held.rss)
		t.sbRatio = fmt.Sprintf("%d sessions, ≈ %.1f KiB each over idle %s", s.n, float64(s.held.rss-s.idle.rss)/float64(s.n), mib(s.idle.rss))
		t.holds = verdict(s.held.rss <= 60*1024 && s.err == "" && s.n >= 1000, true)
	} else if s.skipped != "" {
		t.holds = "not measured (--sessions 0 or --quick)"
	}
	out = append(out, t)

	return out
}

// otherTargets are the binary size, start-up and 2026-07-28 path rows.
func (r *results) otherTargets() []target {
	out := []target{r.sizeTarget()}

	t := target{what: "first complete tools/list after launch, HTTP upstream, over the exec + initialize floor", goal: "≤ 30 ms",
		sb: "–", sbRatio: "–", peer: "–", vsPeer: "–", holds: verdict(false, false)}
	st := r.startup
	if list, fl, in := median(st.toList), median(st.floor), median(st.init); !math.IsNaN(list) && !math.IsNaN(fl) && !math.IsNaN(in) {
		over := list - fl - in
		t.sb = fmt.Sprintf("%+.1f ms", over)
		t.sbRatio = fmt.Sprintf("%.1f ms to the list − (exec %.1f + initialize %.1f)", list, fl, in)
		t.holds = verdict(over <= 30, true)
	}
	out = append(out, t)

	t = target{what: "2026-07-28 stateless client → switchboard → echo (stdio), CPU per call against the 2025-11-25 session path, with the go-sdk and the wire client", goal: "≤ 1× the legacy path",
		sb: "–", sbRatio: "–", peer: "–", vsPeer: "–", holds: verdict(false, false)}
	var vals, parts []string
	ok, seen := true, false
	for _, pair := range []struct{ name, modern, legacy string }{{"go-sdk", idStateless, idLegacy}, {"wire", idWireStateless, idWireLegacy}} {
		var v, q []string
		for _, c := range r.opts.conc {
			a, l, pr := r.cpu(pair.modern, c), r.cpu(pair.legacy, c), r.pairedRatio(pair.modern, pair.legacy, c)
			if math.IsNaN(a) || math.IsNaN(l) || math.IsNaN(pr) {
				continue
			}
			seen = true
			ok = ok && pr <= 1
			v = append(v, fmt.Sprintf("%.0f / %.0f", a, l))
			q = append(q, fmt.Sprintf("%.2f× (c=%d)", pr, c))
		}
		if len(v) > 0 {
			vals = append(vals, pair.name+": "+strings.Join(v, ", ")+" µs")
			parts = append(parts, pair.name+": "+strings.Join(q, ", "))
		}
	}
	if seen {
		t.sb, t.sbRatio = strings.Join(vals, "; "), "paired "+strings.Join(parts, "; ")
		t.holds = verdict(ok, true)
	}
	out = append(out, t)
	return out
}

func (r *results) idle(id string) int64 {
	if sc := r.scenario(id); sc != nil {
		return sc.idleRSS
	}
	return 0
}

// targetTable renders issue 20's targets, switchboard's measured value and
// same-run ratio, and the peer's value where the row applies to it.
func (r *results) targetTable(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Targets (issue 20)\n\n")
	p("| metric | target | switchboard | same-run ratio | peer | switchboard / peer | holds |\n|---|---|---|---|---|---|---|\n")
	for _, t := range r.targets() {
		p("| %s | %s | %s | %s | %s | %s | %s |\n", t.what, t.goal, t.sb, t.sbRatio, t.peer, t.vsPeer, t.holds)
	}
	p("\n\"The upstream's own\" CPU per call is the upstream process's (Node for server-everything, the go-sdk echo fixture over HTTP) in the direct rows at the same c. ")
	p("Added p50 is the median through minus the median direct. p99 / p50 is the ratio of the medians over repetitions. ")
	p("The stateless row gives 2026-07-28 / 2025-11-25 CPU µs per call.\n\n")
}

// callTable renders the tool call measurements, one row per scenario and
// concurrency.
func (r *results) callTable(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Tool calls\n\n")
	p("| scenario | c | calls/s | p50 ms | p90 ms | p99 ms | CPU µs/call | client µs/call | errors | reps |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, sc := range r.scenarios {
		for _, c := range r.opts.conc {
			s := r.summary(sc.id, c)
			if s == nil {
				continue
			}
			errs := "0"
			if s.errors > 0 {
				errs = fmt.Sprintf("**%d** (%.80s)", s.errors, tableCell(s.firstErr))
			}
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %d |\n", sc.name, c, num(s.rate, "%.0f"),
				num(s.p50, "%.3f"), num(s.p90, "%.3f"), num(s.p99, "%.3f"), num(s.cpu, "%.0f"), num(s.client, "%.0f"), errs, s.reps)
		}
	}
	p("\nCPU µs/call is the time all threads of one process spent on a CPU over the timed calls (the scheduler's count, `/proc/PID/task/*/schedstat`), divided by the calls: switchboard or the peer for the rows through them (their stdio children excluded), the upstream for the direct rows. ")
	p("client µs/call is the load client's, this process's, counted the same way: it shares the machine's cores with the process measured. ")
	p("c is the number of concurrent workers: one session each over HTTP, one shared session over stdio.\n\n")
}

// perCall renders, for each upstream and concurrency, the CPU per call of
// the upstream itself, switchboard and the peer, and the latency each adds.
func (r *results) perCall(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Switchboard and the peer side by side\n\n")
	p("| upstream | c | upstream's own CPU µs | switchboard CPU µs | peer CPU µs | switchboard / upstream | peer / upstream | switchboard / peer | added p50, switchboard | added p50, peer |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, g := range []struct{ d, s, pe, label string }{
		{idDirectStdio, idSBStdio, idPeerStdio, "server-everything (stdio)"},
		{idDirectHTTP, idSBHTTP, idPeerHTTP, "echo (HTTP)"},
	} {
		for _, c := range r.opts.conc {
			up, sb, pe := r.cpu(g.d, c), r.cpu(g.s, c), r.cpu(g.pe, c)
			if math.IsNaN(up) && math.IsNaN(sb) {
				continue
			}
			d := r.p50(g.d, c)
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.label, c, num(up, "%.0f"), num(sb, "%.0f"), num(pe, "%.0f"),
				ratio(sb, up), ratio(pe, up), ratio(sb, pe), num(r.p50(g.s, c)-d, "%+.3f ms"), num(r.p50(g.pe, c)-d, "%+.3f ms"))
		}
	}
	p("\n")
}

// memoryTable renders the memory of each switchboard and peer scenario and
// the protocols spoken on either side.
func (r *results) memoryTable(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Memory and protocols\n\n")
	p("| scenario | client protocol | upstream protocol | RSS idle | RSS peak (VmHWM) |\n|---|---|---|---:|---:|\n")
	for _, sc := range r.scenarios {
		if sc.kind == direct || sc.wire { // a wire scenario's process is its go-sdk twin's
			continue
		}
		p("| %s | %s | %s | %s | %s |\n", sc.name, orDash(sc.downstream), orDash(sc.protocol), mib(sc.idleRSS), mib(r.peak[sc.id].hwm))
	}
	p("\nRSS is the proxy process's own, children excluded; the peak is read after the last load step.\n\n")
}

// startupAndScale renders start-up time, memory with many upstreams and
// with many sessions, and the binary sizes.
func (r *results) startupAndScale(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Start-up, many upstreams, many sessions, binaries\n\n")
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
		p("- Floor: `switchboard version` (exec, runtime and package initialisation, nothing else) runs in a median %.1f ms and peaks at %s RSS; ",
			median(st.floor), mib(st.floorRSS))
		p("a new client initialises a session with the HTTP upstream directly, on a new connection, in a median %.1f ms.\n", median(st.init))
	}
	if r.startup.err != "" {
		p("- Start-up measurement failed: %s\n", firstLine(r.startup.err))
	}
	if u := r.upstreams; u.mem.rss > 0 {
		p("- RSS idle with %d stdio upstreams (echo fixtures), children excluded: **%s** (VmHWM %s): %s anonymous (heap, stacks), %s file-backed (pages of the mapped binary).\n",
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
	r.sizeLines(p)
	p("\n")
}

// comparison renders, for each --compare environment, the same-run
// comparison of switchboard with serve's defaults against it.
func (r *results) comparison(b *strings.Builder) {
	for i := range r.opts.compare {
		cmp := r.scenario(compareID(i))
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
	p("switchboard → server-everything, wrap+policy, two processes side by side: one with %s, one with %s added.\n\n", def, with)
	p("| c | CPU µs/call | | p50 ms | | p99 ms | | calls/s | |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	p("| | %s | %s | %s | %s | %s | %s | %s | %s |\n", def, with, def, with, def, with, def, with)
	for _, c := range r.opts.conc {
		a, x := r.summary(idSBStdio, c), r.summary(cmp.id, c)
		if a == nil || x == nil {
			continue
		}
		p("| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", c, num(a.cpu, "%.0f"), num(x.cpu, "%.0f"),
			num(a.p50, "%.3f"), num(x.p50, "%.3f"), num(a.p99, "%.3f"), num(x.p99, "%.3f"), num(a.rate, "%.0f"), num(x.rate, "%.0f"))
	}
	p("\nIdle RSS: %s with %s, %s with %s. Peak (VmHWM): %s and %s.",
		mib(r.idle(idSBStdio)), def, mib(cmp.idleRSS), with, mib(r.peak[idSBStdio].hwm), mib(r.peak[cmp.id].hwm))
	if a, x := r.sessions, sessions; a.held.rss > 0 && x.held.rss > 0 {
		p(" Holding %d idle sessions: %s with %s, %s with %s.", a.n, mib(a.held.rss), def, mib(x.held.rss), with)
	}
	p("\n\n")
}

// profiles renders what perf recorded, if --perf was given.
func (r *results) profiles(b *strings.Builder) {
	if len(r.perf) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## Profiles (perf record -g, c = %d)\n\n", r.perf[0].conc)
	for _, pr := range r.perf {
		if pr.err != "" {
			p("- %s: %s\n\n", pr.name, pr.err)
			continue
		}
		p("### %s\n\n`%s`: %d calls recorded, %s µs CPU per call while recording. Self time by symbol (`perf report --no-children --sort dso,symbol`, entries ≥ 1 %%):\n\n```\n%s\n```\n\n",
			pr.name, pr.file, pr.calls, num(pr.cpu, "%.0f"), strings.TrimRight(pr.top, "\n"))
		if pr.rowsErr != "" {
			p("No breakdown by rows: %s\n\n", pr.rowsErr)
			continue
		}
		p("Each sample counted once, in the first row with a frame on its stack (`perfrows.go`), turned into µs per call from the CPU used while recording:\n\n| where | share | µs per call |\n|---|---:|---:|\n")
		for _, row := range pr.rows {
			p("| %s | %.1f %% | %.1f |\n", row.name, 100*row.share, row.share*pr.cpu)
		}
		p("\n")
	}
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
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

// tableCell is s fit for a markdown table's cell: on one line, its pipes
// escaped.
func tableCell(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", "\\|").Replace(s)
}
