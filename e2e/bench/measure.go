package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clockTicks is the kernel's clock ticks per second for /proc/PID/stat.
var clockTicks = func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
}()

// readCPU returns the CPU time a process has used, all its threads
// included: the sum of each thread's time on a CPU in nanoseconds, from
// /proc/PID/task/TID/schedstat, or, where the kernel has no schedstat,
// user plus system time from /proc/PID/stat.
//
// /proc/PID/stat gives user and system time each in clock ticks (10 ms
// here): two readings around 3,000 calls of 60 µs differ by about 19
// ticks, so each reading's truncation moves a run's CPU per call by up to
// 10 %. The scheduler's own count has no such step. A thread that ends
// between two readings takes its time out of the second; the Go runtime
// keeps its threads, so the processes measured here lose none.
func readCPU(pid int) (time.Duration, error) {
	if haveSchedstat {
		return readSchedCPU(pid)
	}
	return readStatCPU(pid)
}

// haveSchedstat is whether this kernel has per-thread schedstat, decided
// once so that the two readings of a measurement come from one source.
var haveSchedstat = func() bool {
	_, err := readSchedCPU(os.Getpid())
	return err == nil
}()

// readSchedCPU sums the first field of every thread's schedstat: its time
// on a CPU in nanoseconds.
func readSchedCPU(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum int64
	read := 0
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended after the listing
		}
		f, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: bad run time %q", dir, t.Name(), f)
		}
		sum += ns
		read++
	}
	if read == 0 {
		return 0, fmt.Errorf("%s: no thread's schedstat could be read", dir)
	}
	return time.Duration(sum), nil
}

// readStatCPU returns user plus system time, all threads included, from
// /proc/PID/stat, in whole clock ticks.
func readStatCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start after the last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return time.Duration((ut + st) * int64(time.Second) / clockTicks), nil
}

// mem is a process's resident set size, now and at its peak, in KiB, and
// the two parts of the current one: anonymous memory (heap, stacks) and
// file-backed pages (the mapped binary).
type mem struct{ rss, hwm, anon, file int64 }

func readMem(pid int) (mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return mem{}, err
	}
	var m mem
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.rss
		case "VmHWM":
			dst = &m.hwm
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return mem{}, fmt.Errorf("/proc/%d/status %s: %v", pid, k, err)
		}
		*dst = n
	}
	return m, nil
}

// runResult is one repetition of one scenario at one concurrency.
type runResult struct {
	calls    int
	errors   int
	firstErr string
	elapsed  time.Duration
	lat      []time.Duration // sorted
	cpu      time.Duration   // of the scenario's measured process; -1 if unread
	client   time.Duration   // of this process, the load client; -1 if unread
}

func (r runResult) rate() float64 { return float64(r.calls) / r.elapsed.Seconds() }

func (r runResult) cpuPerCall() float64 {
	if r.cpu < 0 || r.calls == 0 {
		return math.NaN()
	}
	return float64(r.cpu.Microseconds()) / float64(r.calls)
}

func (r runResult) clientPerCall() float64 {
	if r.client < 0 || r.calls == 0 {
		return math.NaN()
	}
	return float64(r.client.Microseconds()) / float64(r.calls)
}

// argSeq makes every call's argument distinct across the whole run.
var argSeq atomic.Int64

// call runs one echo call of sc's tool and checks that the result carries
// its argument.
func call(ctx context.Context, cs *mcp.ClientSession, sc *scenario) error {
	arg := "msg-" + strconv.FormatInt(argSeq.Add(1), 10)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: sc.tool, Arguments: map[string]any{sc.argKey: arg}})
	if err != nil {
		return err
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	switch {
	case res.IsError:
		return fmt.Errorf("tool error: %.200s", text.String())
	case !strings.Contains(text.String(), arg):
		return fmt.Errorf("result does not contain %q: %.200s", arg, text.String())
	}
	return nil
}

// runLoad makes calls tool calls with c workers, each on its own session
// (or the scenario's shared one), after a short untimed warm-up. CPU of the
// scenario's process is read just before the timed calls start and just
// after the last one ends.
func runLoad(ctx context.Context, e *env, sc *scenario, c, calls int) (runResult, error) {
	callers, closeCallers, err := e.dial(ctx, sc, c)
	if err != nil {
		return runResult{}, err
	}
	defer closeCallers()

	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	warm := max(1, min(200, calls/10)/c)
	lat := make([][]time.Duration, c)
	errs := make([]int, c)
	firstErr := make([]string, c)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for w := range c {
		n := calls / c
		if w < calls%c {
			n++
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			cl := callers[w]
			note := func(err error) {
				errs[w]++
				if firstErr[w] == "" {
					firstErr[w] = err.Error()
				}
			}
			for range warm {
				if err := cl.call(ctx, sc); err != nil {
					note(err)
				}
			}
			ready.Done()
			<-start
			l := make([]time.Duration, 0, n)
			for range n {
				if ctx.Err() != nil {
					break
				}
				t := time.Now()
				err := cl.call(ctx, sc)
				l = append(l, time.Since(t))
				if err != nil {
					note(err)
				}
			}
			lat[w] = l
		}()
	}
	ready.Wait()
	cpu0, cpuErr := readCPU(sc.pid)
	own0, ownErr := readCPU(os.Getpid())
	t0 := time.Now()
	close(start)
	done.Wait()
	r := runResult{elapsed: time.Since(t0), cpu: -1, client: -1}
	if cpu1, err := readCPU(sc.pid); err == nil && cpuErr == nil {
		r.cpu = cpu1 - cpu0
	}
	if own1, err := readCPU(os.Getpid()); err == nil && ownErr == nil {
		r.client = own1 - own0
	}
	for w := range c {
		r.lat = append(r.lat, lat[w]...)
		r.errors += errs[w]
		if r.firstErr == "" {
			r.firstErr = firstErr[w]
		}
	}
	r.calls = len(r.lat)
	slices.Sort(r.lat)
	if err := ctx.Err(); err != nil {
		return r, err
	}
	return r, nil
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// median of the non-NaN values; NaN if none.
func median(xs []float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// startupResult is the time from exec to the first tools/list that shows
// the tool of an HTTP upstream, over several launches.
type startupResult struct {
	toList   []float64 // ms per launch, default config (upstream protocol "auto")
	pinned   []float64 // ms per launch, upstream protocol pinned to 2025-11-25
	ready    []float64 // ms from exec to the ready file
	floor    []float64 // ms for `switchboard version` to run and exit
	floorRSS int64     // KiB, peak RSS of `switchboard version`
	init     []float64 // ms for a new client to initialise a session with the HTTP upstream directly
	err      string
}

// measureFloor runs `switchboard version` n times: the cost of starting the
// binary at all (exec, runtime and package initialisation), which start-up
// and idle memory cannot go below.
func measureFloor(ctx context.Context, e *env, n int, r *startupResult) {
	for range n {
		cmd := exec.CommandContext(ctx, e.switchboard, "version")
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return
		}
		r.floor = append(r.floor, ms(time.Since(t0)))
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.floorRSS = max(r.floorRSS, ru.Maxrss)
		}
	}
}

// measureStartup launches a switchboard with one HTTP upstream n times with
// the default config and n times with the upstream's protocol pinned,
// alternating. The clock starts just before exec; the ready file is polled
// every 250 µs, then one session is initialised and tools/list repeated
// every 250 µs until the upstream's tool appears.
func measureStartup(ctx context.Context, e *env, n int) startupResult {
	var r startupResult
	measureFloor(ctx, e, n, &r)
	for range n {
		d, err := initOnce(ctx, e.fixtureURL)
		if err != nil {
			r.err = err.Error()
			return r
		}
		r.init = append(r.init, d)
	}
	for range n {
		for _, pin := range []bool{false, true} {
			server := e.httpServer()
			if pin {
				server["protocol"] = protocolVersion
			}
			d, ready, err := e.launchToList(ctx, sbConfig(map[string]any{"echo": server}, true))
			if err != nil {
				r.err = err.Error()
				return r
			}
			if pin {
				r.pinned = append(r.pinned, d)
			} else {
				r.toList, r.ready = append(r.toList, d), append(r.ready, ready)
			}
		}
	}
	return r
}

// initOnce times one initialize with the HTTP upstream from a new client
// on a new connection, as a freshly started switchboard makes it.
func initOnce(ctx context.Context, url string) (float64, error) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := mcp.NewClient(&mcp.Implementation{Name: "switchboard-bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t0 := time.Now()
	cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}},
		&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return 0, err
	}
	d := ms(time.Since(t0))
	_ = cs.Close()
	return d, nil
}

// launchToList starts a switchboard and returns the ms from exec to the
// first tools/list listing mcp_echo_echo, and from exec to the ready file.
func (e *env) launchToList(ctx context.Context, cfg map[string]any) (float64, float64, error) {
	s, err := e.startSwitchboard(ctx, cfg)
	if err != nil {
		return 0, 0, err
	}
	defer s.stop(10 * time.Second)
	cs, err := e.connectHTTP(ctx, s.url(), protocolVersion)
	if err != nil {
		return 0, 0, err
	}
	defer cs.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitTools(wctx, cs, []string{"mcp_echo_echo"}, 250*time.Microsecond); err != nil {
		return 0, 0, err
	}
	return ms(time.Since(s.started)), ms(s.ready), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// upstreamsResult is the idle memory of a switchboard with many stdio
// upstreams; the children are separate processes and are not counted.
type upstreamsResult struct {
	n   int
	mem mem
	err string
}

func measureUpstreams(ctx context.Context, e *env, n int) upstreamsResult {
	r := upstreamsResult{n: n}
	servers := map[string]any{}
	var want []string
	for i := range n {
		name := fmt.Sprintf("echo%d", i)
		servers[name] = e.stdioServer(name)
		want = append(want, "mcp_"+name+"_echo")
	}
	s, err := e.startSwitchboard(ctx, sbConfig(servers, true))
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer s.stop(10 * time.Second)
	cs, err := e.connectHTTP(ctx, s.url(), protocolVersion)
	if err != nil {
		r.err = err.Error()
		return r
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err = waitTools(wctx, cs, want, 10*time.Millisecond)
	_ = cs.Close()
	if err != nil {
		r.err = err.Error()
		return r
	}
	time.Sleep(time.Second)
	if r.mem, err = readMem(s.pid()); err != nil {
		r.err = err.Error()
	}
	return r
}

// sessionsResult is the memory of a switchboard (one stdio upstream, policy
// on) before and while it holds n idle downstream sessions.
type sessionsResult struct {
	n        int
	idle     mem
	held     mem
	reported int // sessions /status counted
	openTime time.Duration
	err      string
	skipped  string
}

// settle is how long the sessions measurement leaves switchboard idle
// before reading its memory: a burst of work is followed by an idle
// release once allocation stops for a second (proxy/internal/gctune).
const settle = 3 * time.Second

// measureSessions starts a switchboard with one stdio upstream, waits until
// it lists the upstream's tool, and reads its memory while idle and while
// it holds n downstream sessions.
func measureSessions(ctx context.Context, e *env, n int, extraEnv ...string) sessionsResult {
	r := sessionsResult{n: n}
	s, err := e.startSwitchboard(ctx, sbConfig(map[string]any{"echo": e.stdioServer("echo")}, true), extraEnv...)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer s.stop(10 * time.Second)
	if err := waitEcho(ctx, e, s); err != nil {
		r.err = err.Error()
		return r
	}
	time.Sleep(settle)
	r.idle, _ = readMem(s.pid())

	t0 := time.Now()
	sessions, failures, firstErr := openSessions(ctx, e, s, n)
	r.openTime = time.Since(t0)
	defer closeSessions(sessions)
	if failures > 0 {
		r.err = fmt.Sprintf("%d of %d sessions failed: %v", failures, n, firstErr)
	}
	time.Sleep(settle)
	r.held, _ = readMem(s.pid())
	if st, err := e.status(ctx, s); err == nil {
		for _, v := range st.Views {
			r.reported += v.Sessions
		}
	}
	return r
}

// waitEcho waits, on a session of its own, until s lists the echo
// upstream's tool.
func waitEcho(ctx context.Context, e *env, s *sbProc) error {
	probe, err := e.connectHTTP(ctx, s.url(), protocolVersion)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = waitTools(wctx, probe, []string{"mcp_echo_echo"}, 5*time.Millisecond)
	cancel()
	_ = probe.Close()
	return err
}

// openSessions opens n sessions to s on 16 workers. A session that failed
// to open is left nil; it returns how many failed and the first error.
func openSessions(ctx context.Context, e *env, s *sbProc, n int) ([]*mcp.ClientSession, int64, any) {
	sessions := make([]*mcp.ClientSession, n)
	var (
		next     atomic.Int64
		failures atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				cs, err := e.connectHTTP(ctx, s.url(), protocolVersion)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				sessions[i] = cs
			}
		}()
	}
	wg.Wait()
	return sessions, failures.Load(), firstErr.Load()
}

// closeSessions closes the sessions that opened, 64 at a time.
func closeSessions(sessions []*mcp.ClientSession) {
	var cw sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, cs := range sessions {
		if cs == nil {
			continue
		}
		cw.Add(1)
		sem <- struct{}{}
		go func() {
			defer cw.Done()
			_ = cs.Close()
			<-sem
		}()
	}
	cw.Wait()
}
