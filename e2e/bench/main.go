// Command bench measures what switchboard adds to a tools/call — latency,
// throughput, CPU and memory — against a direct connection to the same
// upstream and against the real peer, TBXark/mcp-proxy (on mark3labs/mcp-go),
// in front of it, all measured in the same run (the machines it runs on are
// shared and noisy, so only same-run comparisons mean much). It prints the
// targets with their same-run ratios.
//
// The benchmark is a module of its own (e2e/bench), so gonum/plot stays
// out of switchboard's dependencies. Usage, from the repository root:
//
//	go -C e2e/bench run . [--quick] [--reps N] [--calls N] [--max-time D] [--out FILE] [--png FILE] [--perf FILE] [--peer-src DIR] [--build shipped|defaults]
//
// (-C runs it in e2e/bench: relative paths in its flags are taken from
// there.) It builds cmd/switchboard, e2e/fixture and the peer (from a
// scratch copy of its source, with GOWORK=off, so mcp-go stays out of
// switchboard's dependencies) — switchboard and the peer each as its
// project ships it, or both with go build's defaults under --build
// defaults (build.go) —, finds @modelcontextprotocol/server-everything in
// the npm tool cache .ci/setup fills, starts every server on 127.0.0.1
// (port 0 where the server allows it), and prints a markdown report. Every
// process it starts is stopped by PID on exit, including on errors and
// Ctrl-C. It imports only the standard library, go-sdk and gonum/plot.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	bin        string
	reps       int
	calls      int
	maxTime    time.Duration
	quick      bool
	out        string
	png        string
	conc       []int
	sessions   int
	upstreams  int
	sbEnv      []string
	compare    [][]string // extra environments of the comparison scenarios
	npm        string     // directory whose node_modules holds server-everything
	perf       string     // perf.data file for switchboard at c = perfConc (the peer's gets .peer)
	perfCalls  int
	perfConc   int
	pgo        string // --pgo: write the merged CPU profile here
	pgoSeconds int
	peerSrc    string // TBXark/mcp-proxy's source, built in a scratch copy
	build      string // buildShipped or buildDefaults
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bin", "", "`directory` holding switchboard and fixture binaries to reuse (built into it if missing)")
	fs.IntVar(&o.reps, "reps", 3, "repetitions per scenario and concurrency; the report gives medians")
	fs.IntVar(&o.calls, "calls", 3000, "timed calls per repetition, split over the workers")
	fs.DurationVar(&o.maxTime, "max-time", 8*time.Minute, "cap on measuring time (building excluded); the run stops early, and says so, when it is reached")
	fs.BoolVar(&o.quick, "quick", false, "smoke run: 3 repetitions of 300 calls, c = 1 and 8, no many-sessions measurement, no --compare processes, 60 s time cap")
	fs.StringVar(&o.out, "out", "", "also write the markdown report to this `file`")
	fs.StringVar(&o.png, "png", "", "write a p50-latency-vs-concurrency plot to this PNG `file`")
	concFlag := fs.String("conc", "", "comma-separated concurrencies (default 1,8,32; 1,8 with --quick)")
	fs.IntVar(&o.sessions, "sessions", 1000, "idle downstream sessions to hold for the memory measurement (0 = skip)")
	fs.IntVar(&o.upstreams, "upstreams", 10, "stdio upstreams for the idle-memory measurement")
	// serve runs on one processor unless GOMAXPROCS is set, and with the
	// runtime's monitor backing off unless GODEBUG names schedtrace: the
	// default comparisons are with Go's own defaults for each.
	compare := fs.String("compare", fmt.Sprintf("GODEBUG=schedtrace=0;GOMAXPROCS=%d", runtime.NumCPU()), "`KEY=VALUE,…;…`: for each ;-separated environment, also run switchboard → server-everything, wrap+policy with it added, to show its effect in the same run (\"\" = none)")
	fs.StringVar(&o.npm, "npm", defaultNPM(), "`directory` whose node_modules holds Node 22 and @modelcontextprotocol/server-everything (.ci/setup installs them)")
	fs.StringVar(&o.perf, "perf", "", "after the measurements, record `FILE` with perf record -g on switchboard → server-everything at c = --perf-conc (FILE.peer on the peer, FILE.2026 and FILE.2025 on the stateless comparison's switchboards, FILE.http and FILE.peer-http on switchboard and the peer → HTTP echo)")
	fs.IntVar(&o.perfCalls, "perf-calls", 20000, "calls made while perf records each process")
	fs.IntVar(&o.perfConc, "perf-conc", 8, "concurrency of the calls made while perf records each process")
	fs.StringVar(&o.pgo, "pgo", "", "after the measurements, write to `FILE` the CPU profile of switchboard under the loads the targets measure, merged, for profile-guided optimisation (cmd/switchboard/default.pgo); switchboard processes then run with --admin-pprof")
	fs.IntVar(&o.pgoSeconds, "pgo-seconds", 20, "seconds of each CPU profile --pgo records")
	fs.StringVar(&o.peerSrc, "peer-src", "", "`directory` of TBXark/mcp-proxy's source, the peer (default: shared/peers/tbxark-mcp-proxy beside the repository)")
	fs.StringVar(&o.build, "build", buildShipped, "`how` to build switchboard and the peer: \"shipped\" (each as its project ships it: switchboard as charts/images/Dockerfile, the peer as its Makefile) or \"defaults\" (both with go build's defaults, as the benchmark built them until it built them as shipped; switchboard's functions are named in --perf's profiles only so)")
	sbEnv := fs.String("sb-env", "", "comma-separated `KEY=VALUE` pairs added to the environment of switchboard processes only (e.g. GOGC=400)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.build != buildShipped && o.build != buildDefaults {
		return nil, fmt.Errorf("--build: %q is neither %q nor %q", o.build, buildShipped, buildDefaults)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.conc = []int{1, 8, 32}
	if o.quick {
		if !set["reps"] {
			o.reps = 3
		}
		if !set["calls"] {
			o.calls = 300
		}
		if !set["sessions"] {
			o.sessions = 0
		}
		if !set["max-time"] {
			o.maxTime = 60 * time.Second
		}
		if !set["compare"] {
			*compare = ""
		}
		o.conc = []int{1, 8}
	}
	if *concFlag != "" {
		o.conc = nil
		for _, f := range strings.Split(*concFlag, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--conc: bad value %q", f)
			}
			o.conc = append(o.conc, n)
		}
		slices.Sort(o.conc)
		o.conc = slices.Compact(o.conc)
	}
	var err error
	if o.sbEnv, err = parseEnv("--sb-env", *sbEnv); err != nil {
		return nil, err
	}
	if *compare != "" {
		for _, envs := range strings.Split(*compare, ";") {
			extra, err := parseEnv("--compare", envs)
			if err != nil {
				return nil, err
			}
			o.compare = append(o.compare, extra)
		}
	}
	switch {
	case o.reps < 1:
		return nil, errors.New("--reps must be at least 1")
	case o.calls < o.conc[len(o.conc)-1]:
		return nil, errors.New("--calls must be at least the largest concurrency")
	case o.upstreams < 1:
		return nil, errors.New("--upstreams must be at least 1")
	}
	return o, nil
}

// defaultNPM is where .ci/setup installs the npm test tools:
// $SWITCHBOARD_NPM if set, else $SWITCHBOARD_CACHE/npm, else
// ~/.cache/switchboard/npm.
func defaultNPM() string {
	if d := os.Getenv("SWITCHBOARD_NPM"); d != "" {
		return d
	}
	cache := os.Getenv("SWITCHBOARD_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache", "switchboard")
	}
	return filepath.Join(cache, "npm")
}

// parseEnv reads comma-separated KEY=VALUE pairs ("" is none).
func parseEnv(flagName, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var env []string
	for _, kv := range strings.Split(s, ",") {
		if !strings.Contains(kv, "=") {
			return nil, fmt.Errorf("%s: %q is not KEY=VALUE", flagName, kv)
		}
		env = append(env, strings.TrimSpace(kv))
	}
	return env, nil
}

func main() {
	os.Exit(run())
}

func run() int {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	work, err := os.MkdirTemp("", "switchboard-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer func() {
		cleanup()
		_ = os.RemoveAll(work)
	}()

	res, err := measure(ctx, o, work)
	if res != nil && (res.repsDone > 0 || len(res.runs) > 0) {
		if werr := res.write(); werr != nil {
			fmt.Fprintln(os.Stderr, "bench:", werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// write prints the report and writes the requested files.
func (r *results) write() error {
	md := r.markdown()
	fmt.Print(md)
	if r.opts.out != "" {
		if err := os.WriteFile(r.opts.out, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if r.opts.png != "" {
		if err := r.writePlot(r.opts.png); err != nil {
			return err
		}
	}
	return nil
}

func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}

// measure builds, starts the servers and runs every measurement. It returns
// what was measured so far even when it fails or is interrupted.
func measure(ctx context.Context, o *options, work string) (*results, error) {
	res := &results{opts: o, machine: readMachine(), runs: map[cellKey][]runResult{}, peak: map[string]mem{},
		resident: map[string]resident{}, initHeap: map[string]initHeap{}}
	b, notes, err := build(ctx, o, work)
	if err != nil {
		return nil, err
	}
	res.sizes = b.sizes
	res.notes = append(res.notes, notes...)
	if b.peerErr != nil {
		res.notes = append(res.notes, fmt.Sprintf("the peer did not build, so its rows are missing: %s", firstLine(b.peerErr.Error())))
	}
	began := time.Now()
	deadline := began.Add(o.maxTime)
	defer func() {
		res.took = time.Since(began)
		res.machine.loadEnd = loadAvg()
	}()

	e := newEnv(o, b, work)
	if err := e.findEverything(); err != nil {
		res.notes = append(res.notes, fmt.Sprintf("@modelcontextprotocol/server-everything not found (%v; run .ci/setup, or pass --npm): the rows with the stdio upstream it stands for are skipped, and so are the targets measured on them.", err))
		progress("server-everything not found (%v): skipping its rows", err)
	} else {
		res.everything = e.everythingVersion
	}
	if err := e.startFixtureHTTP(ctx); err != nil {
		return nil, fmt.Errorf("echo server over HTTP: %w", err)
	}

	progress("start-up to tools/list, %d launches per config", max(o.reps, 5))
	res.startup = measureStartup(ctx, e, max(o.reps, 5))
	progress("idle memory with %d stdio upstreams", o.upstreams)
	res.upstreams = measureUpstreams(ctx, e, o.upstreams)
	if o.sessions > 0 {
		progress("memory with %d idle sessions", o.sessions)
		res.sessions = measureSessions(ctx, e, o.sessions)
		for _, extra := range o.compare {
			progress("memory with %d idle sessions, %s", o.sessions, strings.Join(extra, " "))
			res.sessionsCmp = append(res.sessionsCmp, measureSessions(ctx, e, o.sessions, extra...))
		}
	} else {
		res.sessions.skipped = "Many-sessions memory: skipped (--quick or --sessions 0)."
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	progress("starting scenarios")
	res.scenarios, err = e.setupScenarios(ctx)
	if err != nil {
		return res, err
	}
	err = res.load(ctx, e, deadline)
	// The peak is read before any profiling adds calls of its own.
	for _, sc := range res.scenarios {
		if sc.kind != direct {
			if m, err := readMem(sc.pid); err == nil {
				res.peak[sc.id] = m
			}
		}
	}
	res.measureMadeOf(ctx, e)
	if errors.Is(err, context.Canceled) {
		res.notes = append(res.notes, "interrupted; the tables hold what was measured before.")
		return res, err
	}
	if err == nil && o.perf != "" {
		res.perf, err = recordProfiles(ctx, e, res.scenarios, o)
	}
	if err == nil && o.pgo != "" {
		var note string
		if note, err = writePGO(ctx, e, res.scenarios, o, work); err == nil {
			res.notes = append(res.notes, note)
		}
	}
	return res, err
}

// load runs the repetitions. Within one repetition, every scenario runs at
// one concurrency before the next concurrency starts, so direct and
// through runs alternate closely in time; odd repetitions run the scenarios
// in reverse order, so no scenario always follows the same neighbour.
func (r *results) load(ctx context.Context, e *env, deadline time.Time) error {
	o := r.opts
	for rep := range o.reps {
		for _, c := range o.conc {
			order := slices.Clone(r.scenarios)
			if rep%2 == 1 {
				slices.Reverse(order)
			}
			for _, sc := range order {
				if time.Now().After(deadline) {
					r.notes = append(r.notes, fmt.Sprintf("stopped early: the %s time cap (--max-time) was reached during repetition %d of %d; cells show how many repetitions they got.",
						o.maxTime, rep+1, o.reps))
					return nil
				}
				run, err := runLoad(ctx, e, sc, c, o.calls)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err != nil {
					run = runResult{calls: 0, errors: o.calls, firstErr: err.Error(), cpu: -1}
				}
				r.add(sc, c, run)
				progress("rep %d/%d c=%-2d %-20s %6.0f calls/s  p50 %.3f ms  p99 %.3f ms  cpu %s µs/call  errors %d",
					rep+1, o.reps, c, sc.id, run.rate(), ms(percentile(run.lat, .5)), ms(percentile(run.lat, .99)), num(run.cpuPerCall(), "%.0f"), run.errors)
			}
		}
		r.repsDone = rep + 1
	}
	return nil
}

// machine describes where the numbers come from.
type machine struct {
	source     string // commit the binaries were built from, and whether the tree differed
	nproc      int
	gomaxprocs int
	goVersion  string
	cpu        string
	kernel     string
	loadStart  string
	loadEnd    string
	date       time.Time
}

func readMachine() machine {
	m := machine{
		nproc:      runtime.NumCPU(),
		gomaxprocs: runtime.GOMAXPROCS(0),
		goVersion:  runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		cpu:        "unknown CPU",
		kernel:     "unknown",
		loadStart:  loadAvg(),
		date:       time.Now(),
		source:     gitSource(),
	}
	if out, err := exec.Command("nproc").Output(); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
			m.nproc = n
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	return m
}

// gitSource names the commit the work tree is at and the files in it that
// differ from that commit, other than the benchmark's own.
func gitSource() string {
	head, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	src := "commit " + strings.TrimSpace(string(head))
	out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return src
	}
	var changed []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if len(line) < 4 {
			continue
		}
		f := strings.TrimSpace(line[3:])
		if strings.HasPrefix(f, "e2e/bench/") || strings.HasPrefix(f, "docs/") {
			continue
		}
		changed = append(changed, f)
	}
	if len(changed) > 0 {
		src += fmt.Sprintf(" with uncommitted changes to %s", strings.Join(changed, ", "))
	}
	return src
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
