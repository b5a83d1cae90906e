package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// Resilience: real switchboard, real fixture children, faults injected
// through the fixture's flags. Every test checks that switchboard stays up,
// that a healthy neighbour is not disturbed, what the client gets, what
// /status says, and that no process is left behind (newMark).
//
// Timings are real, except where a test sets a server's restartBackoff
// (the soak and load tests, which need many restarts in little time).

// backoffSlack is what a restart may take beyond its backoff: starting a
// race-built fixture and initializing it on a loaded two-core machine.
const backoffSlack = 2500 * time.Millisecond

func callCtx(cs *mcp.ClientSession, d time.Duration, name string, args any) (*mcp.CallToolResult, error, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	return res, err, time.Since(start)
}

// wantToolError calls a tool and fails unless the result is isError with
// every one of the fragments in its text.
func wantToolError(t *testing.T, cs *mcp.ClientSession, tool string, args any, fragments ...string) (string, time.Duration) {
	t.Helper()
	res, err, took := callCtx(cs, 30*time.Second, tool, args)
	if err != nil {
		t.Fatalf("%s: want an isError result, got error %v", tool, err)
	}
	text := textOf(res)
	if !res.IsError {
		t.Fatalf("%s: want an isError result, got %q", tool, tail(text, 200))
	}
	for _, f := range fragments {
		if !strings.Contains(text, f) {
			t.Errorf("%s: tool error %q lacks %q", tool, text, f)
		}
	}
	return text, took
}

// healthyEcho checks that the healthy neighbour still answers.
func healthyEcho(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res := mustCall(t, cs, "mcp_healthy_echo", map[string]any{"text": "still here"})
	if res.IsError || !strings.Contains(textOf(res), "still here") {
		t.Errorf("healthy server disturbed: %s", js(res))
	}
}

func waitListed(t *testing.T, cs *mcp.ClientSession, names ...string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, strings.Join(names, ", ")+" listed", func() bool {
		tools := listTools(t, cs)
		for _, n := range names {
			if tools[n] == nil {
				return false
			}
		}
		return true
	})
}

// counter counts notifications/tools/list_changed on a client.
func listChangedCounter() (*mcp.ClientOptions, *atomic.Int32) {
	var n atomic.Int32
	return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { n.Add(1) }}, &n
}

// TestFaultCrashAfterCalls: the upstream exits on its third call. The call
// gets a tool error naming the server, calls during the restart fail fast,
// the tools stay listed (no list_changed: the re-listed catalog is the
// same), and the restarted process answers after about 1 s.
func TestFaultCrashAfterCalls(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  markedServer("victim", mark, "--crash-after", "2"),
		"healthy": markedServer("healthy", mark),
	}})
	opts, changed := listChangedCounter()
	cs := s.client(t, opts)
	waitListed(t, cs, "mcp_victim_count", "mcp_healthy_echo")
	first := s.waitServer(t, "victim", 10*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	time.Sleep(300 * time.Millisecond) // let notifications of the initial listing settle
	changed.Store(0)

	for i := 1; i <= 2; i++ {
		if got := unwrap(textOf(mustCall(t, cs, "mcp_victim_count", map[string]any{}))); got != strconv.Itoa(i) {
			t.Fatalf("call %d: count %q", i, got)
		}
	}
	crashed := time.Now()
	wantToolError(t, cs, "mcp_victim_count", map[string]any{}, "server 'victim'", "connection lost during the call")
	st := s.waitServer(t, "victim", 5*time.Second, "restarting", func(st serverState) bool { return st.State == "restarting" })
	if !strings.Contains(st.LastError, "exit status 3") {
		t.Errorf("last error %q lacks the exit status", st.LastError)
	}
	if st.NextAttempt.IsZero() {
		t.Error("restarting without a next attempt time")
	}
	if _, took := wantToolError(t, cs, "mcp_victim_echo", map[string]any{"text": "x"}, "server 'victim' is restarting, next attempt in ~1s"); took > 500*time.Millisecond {
		t.Errorf("call while restarting took %s, want fail-fast", took)
	}
	if listTools(t, cs)["mcp_victim_echo"] == nil {
		t.Error("tools left the list while restarting")
	}
	healthyEcho(t, cs)

	back := s.waitServer(t, "victim", 15*time.Second, "ready again", func(st serverState) bool { return st.State == "ready" && st.PID != first.PID })
	if d := time.Since(crashed); d < 900*time.Millisecond || d > time.Second+backoffSlack {
		t.Errorf("back after %s, want the 1s backoff", d)
	}
	if back.Restarts != 1 || back.Tools != first.Tools {
		t.Errorf("after restart: restarts %d tools %d (before %d)", back.Restarts, back.Tools, first.Tools)
	}
	if got := unwrap(textOf(mustCall(t, cs, "mcp_victim_count", map[string]any{}))); got != "1" {
		t.Errorf("restarted process count %q, want 1 (a fresh process)", got)
	}
	if pidAlive(first.PID) {
		t.Errorf("crashed child %d still alive", first.PID)
	}
	// A list_changed would follow the new catalog at once; nothing signals
	// its absence, so this waits half a second for it.
	time.Sleep(500 * time.Millisecond)
	if n := changed.Load(); n != 0 {
		t.Errorf("%d list_changed notifications for a restart that changed nothing", n)
	}
	noZombies(t, s.pid(), 3*time.Second)
}

// TestFaultFailedServerLeavesList: with no restarts left, a crash withdraws
// the server's tools and clients get list_changed.
func TestFaultFailedServerLeavesList(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  with(markedServer("victim", mark), "maxRestarts", 0),
		"healthy": markedServer("healthy", mark),
	}})
	opts, changed := listChangedCounter()
	cs := s.client(t, opts)
	waitListed(t, cs, "mcp_victim_crash", "mcp_healthy_echo")
	time.Sleep(300 * time.Millisecond) // let notifications of the initial listing settle
	changed.Store(0)
	wantToolError(t, cs, "mcp_victim_crash", map[string]any{}, "server 'victim'")
	s.waitServer(t, "victim", 5*time.Second, "failed", func(st serverState) bool { return st.State == "failed" && st.Tools == 0 })
	testutil.Eventually(t, 5*time.Second, "list_changed", func() bool { return changed.Load() > 0 })
	if listTools(t, cs)["mcp_victim_echo"] != nil {
		t.Error("failed server still listed")
	}
	_, err := callTool(t, cs, "mcp_victim_echo", map[string]any{"text": "x"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("call to a withdrawn tool: %v", err)
	}
	healthyEcho(t, cs)
}

// TestFaultExitAtStart: a server that never starts is retried on the
// documented schedule, then marked failed; its tools never appear, readiness
// is not held up, and the neighbour is fine.
func TestFaultExitAtStart(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  with(markedServer("victim", mark, "--exit-at-start", "7"), "maxRestarts", 3),
		"healthy": markedServer("healthy", mark),
	}})
	// Record when each failure is noticed (consecutiveFailures counts
	// them), but only failures seen as they happened: the first one may
	// predate the first poll.
	seen := map[int]time.Time{}
	last := -1
	deadline := time.Now().Add(30 * time.Second)
	var st serverState
	for time.Now().Before(deadline) {
		st = s.server(t, "victim")
		if st.Failures == last+1 && last >= 0 {
			seen[st.Failures] = time.Now()
		}
		last = st.Failures
		if st.State == "failed" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.State != "failed" || st.Failures != 4 || st.Restarts != 3 {
		t.Fatalf("want failed after 4 failures and 3 restarts, got %+v", st)
	}
	if !strings.Contains(st.LastError, "process exited before initialize finished") {
		t.Errorf("last error %q", st.LastError)
	}
	checked := 0
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second} {
		a, okA := seen[n]
		b, okB := seen[n+1]
		if !okA || !okB {
			continue
		}
		checked++
		if d := b.Sub(a); d < want*9/10 || d > want*11/10+backoffSlack {
			t.Errorf("failure %d to %d: %s, want the %s backoff", n, n+1, d, want)
		}
	}
	if checked < 2 {
		t.Errorf("observed too few failures as they happened: %v", seen)
	}
	if code := s.readyz(t); code != 200 {
		t.Errorf("/readyz %d: a failed server must not hold up readiness once it was tried", code)
	}
	if code := s.healthz(t); code != 200 {
		t.Errorf("/healthz %d with a failed upstream", code)
	}
	// The operator's view: switchboard status prints the table, or the JSON.
	dir := t.TempDir()
	table := startOut(t, dir, switchboard, "status", "--admin", s.admin)
	if code := table.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("status exit %d: %s", code, table.Stderr())
	}
	out := table.stdout.String()
	for _, want := range []string{"SERVER", "TRANSPORT", "BREAKER", "RESTARTS", "LAST ERROR", "victim", "failed", "process exited before initialize", "healthy", "ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
	raw := startOut(t, dir, switchboard, "status", "--admin", s.admin, "--json")
	if code := raw.wait(t, 20*time.Second); code != 0 || !strings.Contains(raw.stdout.String(), `"consecutiveFailures": 4`) {
		t.Errorf("status --json exit %d:\n%s", code, raw.stdout.String())
	}
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_healthy_echo")
	if listTools(t, cs)["mcp_victim_echo"] != nil {
		t.Error("a server that never started has listed tools")
	}
	healthyEcho(t, cs)
	if !strings.Contains(s.Stderr(), "exiting at start with code 7") {
		t.Error("the child's stderr was not re-logged")
	}
}

// TestFaultSlowStart: readiness waits for a slow first start within its
// timeout; a start slower than the timeout is abandoned and its process
// stopped.
func TestFaultSlowStart(t *testing.T) {
	mark := newMark(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"slow":    with(markedServer("slow", mark, "--slow-start", "2s"), "timeout", 15000),
		"tooslow": with(markedServer("tooslow", mark, "--slow-start", "1h", "--pid-file", pidFile), "timeout", 1000, "maxRestarts", 0),
		"healthy": markedServer("healthy", mark),
	}})
	if st := s.server(t, "slow"); st.State != "starting" {
		t.Errorf("slow server is %s right after boot, want starting", st.State)
	}
	if code := s.readyz(t); code != 503 {
		t.Errorf("/readyz %d while a server makes its first attempt, want 503", code)
	}
	cs := s.client(t, nil)
	// The endpoint serves calls while upstreams start…
	testutil.Eventually(t, 10*time.Second, "a call to the healthy server", func() bool {
		res, err, _ := callCtx(cs, 5*time.Second, "mcp_healthy_echo", map[string]any{"text": "still here"})
		return err == nil && !res.IsError
	})
	if st := s.server(t, "slow"); st.State != "starting" {
		t.Errorf("slow server is %s while the neighbour serves, want starting", st.State)
	}
	// …and the first list waits for every server's first attempt (each for
	// at most its timeout), so it has the slow server's tools.
	if tools := listTools(t, cs); tools["mcp_slow_echo"] == nil || tools["mcp_healthy_echo"] == nil {
		t.Errorf("the first list lacks the slow or the healthy server's tools: %v", keys(tools))
	}
	if st := s.server(t, "slow"); st.State != "ready" {
		t.Errorf("slow server is %s after the first list, want ready", st.State)
	}
	st := s.waitServer(t, "tooslow", 20*time.Second, "failed", func(st serverState) bool { return st.State == "failed" })
	if !strings.Contains(st.LastError, "connect timeout") {
		t.Errorf("last error %q", st.LastError)
	}
	testutil.Eventually(t, 10*time.Second, "/readyz 200", func() bool { return s.readyz(t) == 200 })
	pid := readPIDFile(t, pidFile)
	testutil.Eventually(t, 10*time.Second, "abandoned child stopped", func() bool { return !pidAlive(pid) })
	waitListed(t, cs, "mcp_slow_echo")
}

// TestFaultHungCall: a call that never answers costs the caller exactly
// toolTimeout and becomes the documented tool error. (That the upstream is
// sent notifications/cancelled is checked with a real child in upstream's
// TestStdioCallTimeoutCancelsUpstream.)
func TestFaultHungCall(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  with(markedServer("victim", mark), "toolTimeout", 500),
		"healthy": markedServer("healthy", mark),
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_hang", "mcp_healthy_echo")
	type result struct {
		res  *mcp.CallToolResult
		err  error
		took time.Duration
	}
	hung := make(chan result, 1)
	go func() {
		res, err, took := callCtx(cs, 30*time.Second, "mcp_victim_hang", map[string]any{})
		hung <- result{res, err, took}
	}()
	// The neighbour answers while the victim hangs: it is called once
	// /status counts the hung call in flight.
	s.waitServer(t, "victim", 5*time.Second, "with the hung call in flight", func(st serverState) bool { return st.InFlight > 0 })
	res, err, took := callCtx(cs, 10*time.Second, "mcp_healthy_echo", map[string]any{"text": "meanwhile"})
	if err != nil || res.IsError || took > 400*time.Millisecond {
		t.Errorf("healthy call during the hang: %v %v after %s", err, res, took)
	}
	h := <-hung
	if h.err != nil || !h.res.IsError || !strings.Contains(textOf(h.res), "Tool call timed out after 500ms") {
		t.Fatalf("hung call: want the tool error of its timeout, got %v %s", h.err, js(h.res))
	}
	if h.took < 500*time.Millisecond || h.took > 2500*time.Millisecond {
		t.Errorf("hung call took %s, want about the 500ms tool timeout", h.took)
	}
	st := s.server(t, "victim")
	if st.State != "ready" || st.InFlight != 0 || st.Breaker != "closed" {
		t.Errorf("after one timeout: %+v", st)
	}
	if res := mustCall(t, cs, "mcp_victim_echo", map[string]any{"text": "ok"}); res.IsError {
		t.Errorf("victim broken after a timeout: %s", js(res))
	}
}

// TestFaultMalformedLine: an upstream that writes a line to stdout that is
// not JSON-RPC (a banner, a stray log line) keeps its session: the line is
// logged and skipped, the call in flight gets its answer, and the process is
// the same one.
func TestFaultMalformedLine(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  markedServer("victim", mark, "--malformed-after", "1"),
		"healthy": markedServer("healthy", mark),
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_echo", "mcp_healthy_echo")
	first := s.server(t, "victim")
	mustCall(t, cs, "mcp_victim_echo", map[string]any{"text": "fine"})
	res := mustCall(t, cs, "mcp_victim_echo", map[string]any{"text": "garbled"})
	if res.IsError || !strings.Contains(textOf(res), "garbled") {
		t.Fatalf("call after a stray stdout line: %s", js(res))
	}
	testutil.Eventually(t, 5*time.Second, "the skipped line logged", func() bool {
		return strings.Contains(s.Stderr(), `switchboard.upstream.victim: stdout line skipped: not JSON-RPC: line="{not json"`)
	})
	if st := s.server(t, "victim"); st.State != "ready" || st.PID != first.PID || st.Restarts != 0 {
		t.Errorf("the session did not survive the stray line: %+v", st)
	}
	healthyEcho(t, cs)
}

// TestFaultHugeResult: a large result (1 MiB) passes whole; one beyond the
// stdio frame limit (16 MiB) ends the session, which is restarted, and the
// client gets a tool error instead of a hang. The oversized case runs only
// without -race: race-instrumented JSON encoding and decoding of 17 MiB
// takes tens of seconds on two cores. Under -race the same path (a
// connection broken under a call: tool error, prompt stop, restart) is
// covered by upstream's TestStdioBrokenConnectionStopsChildPromptly, with
// the line limit lowered, and by the crash tests here.
func TestFaultHugeResult(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{
		"sanitize": map[string]any{"wrapResults": false},
		"mcpServers": map[string]any{
			"victim":  markedServer("victim", mark),
			"healthy": markedServer("healthy", mark),
		},
	})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_huge", "mcp_healthy_echo")
	first := s.server(t, "victim")
	const big = 1 << 20
	res := mustCall(t, cs, "mcp_victim_huge", map[string]any{"bytes": big})
	if res.IsError || len(textOf(res)) != big || strings.Trim(textOf(res), "x") != "" {
		t.Fatalf("1 MiB result: isError %v, %d bytes", res.IsError, len(textOf(res)))
	}
	healthyEcho(t, cs)
	if raceEnabled {
		t.Log("oversized frame skipped under -race")
		return
	}
	wantToolError(t, cs, "mcp_victim_huge", map[string]any{"bytes": 17 << 20}, "server 'victim'", "connection lost during the call")
	healthyEcho(t, cs)
	s.waitServer(t, "victim", 20*time.Second, "restarted", func(st serverState) bool { return st.State == "ready" && st.PID != first.PID })
	if res := mustCall(t, cs, "mcp_victim_echo", map[string]any{"text": "small"}); res.IsError {
		t.Errorf("after restart: %s", js(res))
	}
}

// TestFaultStderrFlood: a child that floods stderr is rate limited and
// capped in the log, and works.
func TestFaultStderrFlood(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  markedServer("victim", mark, "--stderr-flood", "20000"),
		"healthy": markedServer("healthy", mark),
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_echo", "mcp_healthy_echo")
	if res := mustCall(t, cs, "mcp_victim_echo", map[string]any{"text": "loud"}); res.IsError {
		t.Errorf("flooding server: %s", js(res))
	}
	healthyEcho(t, cs)
	// The dropped lines are reported once the burst is over.
	testutil.Eventually(t, 10*time.Second, "the dropped lines reported", func() bool {
		return strings.Contains(s.Stderr(), "stderr lines dropped")
	})
	logs := s.Stderr()
	if n := strings.Count(logs, "flood line"); n > 1000 {
		t.Errorf("%d of 20000 flood lines reached the log; want rate limiting", n)
	}
	for _, want := range []string{"stderr lines dropped", "truncated=true"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if strings.Contains(logs, strings.Repeat("y", 5000)) {
		t.Error("the 16 KiB line reached the log uncut")
	}
}

// TestFaultIgnoreSIGTERM: a child that ignores stdin EOF and SIGTERM is
// killed 1 s + 5 s into switchboard's shutdown, which still exits 0.
func TestFaultIgnoreSIGTERM(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  markedServer("victim", mark, "--ignore-sigterm"),
		"healthy": markedServer("healthy", mark),
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_echo", "mcp_healthy_echo")
	victim := s.server(t, "victim").PID
	cs.Close()
	code, took := s.terminate(t, 20*time.Second)
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took < 5*time.Second || took > 10*time.Second {
		t.Errorf("shutdown took %s, want about 6s (1s after stdin EOF, SIGTERM, 5s, SIGKILL)", took)
	}
	if pidAlive(victim) {
		t.Errorf("child %d that ignores SIGTERM survived", victim)
	}
}

// TestFaultGrandchild: killing a child takes its grandchild (same process
// group) with it, at the crash and at shutdown.
func TestFaultGrandchild(t *testing.T) {
	mark := newMark(t)
	gcFile := filepath.Join(t.TempDir(), "grandchild")
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  markedServer("victim", mark, "--spawn-grandchild", gcFile),
		"healthy": markedServer("healthy", mark),
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_echo", "mcp_healthy_echo")
	first := s.server(t, "victim")
	gc := readPIDFile(t, gcFile)
	if p, ok := readProc(gc); !ok || p.pgid != first.PID {
		t.Fatalf("grandchild %d not in the child's group %d: %+v", gc, first.PID, p)
	}
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "grandchild killed with its parent", func() bool { return !pidAlive(gc) })
	s.waitServer(t, "victim", 15*time.Second, "restarted", func(st serverState) bool { return st.State == "ready" && st.PID != first.PID })
	healthyEcho(t, cs)
	testutil.Eventually(t, 10*time.Second, "a new grandchild", func() bool {
		p := readPIDFile(t, gcFile)
		return p != gc && pidAlive(p)
	})
	if n := len(marked(mark)); n != 3 {
		t.Errorf("%d marked processes, want 3 (victim, its grandchild, healthy)", n)
	}
	cs.Close()
	if code, _ := s.terminate(t, 20*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	// newMark's cleanup checks that the new grandchild went too.
}

// TestKill9RecoversOnSchedule kills a child with SIGKILL four times in a
// row: each comes back after 1, 2, 4, 8 s (±10 %, plus start-up), calls in
// between fail fast with the retry time, and no process is left over.
func TestKill9RecoversOnSchedule(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim":  with(markedServer("victim", mark), "maxRestarts", 10),
		"healthy": markedServer("healthy", mark),
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_echo", "mcp_healthy_echo")
	st := s.waitServer(t, "victim", 10*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	var killed []int
	for i, backoff := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		old := st.PID
		start := time.Now()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed = append(killed, old)
		s.waitServer(t, "victim", 5*time.Second, "restarting", func(st serverState) bool { return st.State == "restarting" })
		text, _ := wantToolError(t, cs, "mcp_victim_echo", map[string]any{"text": "x"}, "server 'victim' is restarting, next attempt in ~")
		if n, err := strconv.Atoi(strings.TrimSuffix(text[strings.LastIndex(text, "~")+1:], "s")); err != nil || n < int(backoff/time.Second)-1 || n > int(backoff/time.Second)+1 {
			t.Errorf("kill %d: %q, want about %s", i+1, text, backoff)
		}
		st = s.waitServer(t, "victim", backoff+10*time.Second, "back", func(st serverState) bool { return st.State == "ready" && st.PID != old })
		if d := time.Since(start); d < backoff*9/10 || d > backoff*11/10+backoffSlack {
			t.Errorf("kill %d: back after %s, want the %s backoff", i+1, d, backoff)
		}
		if st.Restarts != i+1 || st.Failures != i+1 {
			t.Errorf("kill %d: restarts %d, consecutive failures %d", i+1, st.Restarts, st.Failures)
		}
		healthyEcho(t, cs)
	}
	for _, pid := range killed {
		if pidAlive(pid) {
			t.Errorf("killed child %d alive", pid)
		}
	}
	noZombies(t, s.pid(), 3*time.Second)
	if n := len(marked(mark)); n != 2 {
		t.Errorf("%d marked processes, want 2", n)
	}
}

// TestKilledHealthyServerStaysUp: with maxRestarts 2, a server that
// answers a call in each run and is then killed with SIGKILL, five times,
// is restarted after the first backoff step (1 s) every time and stays up:
// the crash of a run that served a call is not a failed start.
func TestKilledHealthyServerStaysUp(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"victim": with(markedServer("victim", mark), "maxRestarts", 2),
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_echo")
	st := s.waitServer(t, "victim", 10*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	for kill := 1; kill <= 5; kill++ {
		if res := mustCall(t, cs, "mcp_victim_echo", map[string]any{"text": "served"}); res.IsError || !strings.Contains(textOf(res), "served") {
			t.Fatalf("run %d: call: %s", kill, js(res))
		}
		old := st.PID
		start := time.Now()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		down := s.waitServer(t, "victim", 5*time.Second, "down", func(st serverState) bool { return st.State != "ready" || st.PID != old })
		if down.State == "failed" {
			t.Fatalf("kill %d: failed: %+v", kill, down)
		}
		if down.State == "restarting" {
			wantToolError(t, cs, "mcp_victim_echo", map[string]any{"text": "x"}, "server 'victim' is restarting, next attempt in ~1s")
		}
		st = s.waitServer(t, "victim", 10*time.Second, "back", func(st serverState) bool {
			return st.State == "failed" || st.State == "ready" && st.PID != old
		})
		if st.State != "ready" {
			t.Fatalf("kill %d: %+v, want ready", kill, st)
		}
		if d := time.Since(start); d > time.Second*11/10+backoffSlack {
			t.Errorf("kill %d: back after %s, want the 1s backoff", kill, d)
		}
		if st.Restarts != kill || st.Failures != 0 {
			t.Errorf("kill %d: restarts %d, consecutive failed starts %d; want %d and 0", kill, st.Restarts, st.Failures, kill)
		}
	}
	noZombies(t, s.pid(), 3*time.Second)
}

// TestResilienceHTTPDownAtBoot: an HTTP upstream that is down at boot keeps
// being retried; when it comes up its tools appear, when it goes away it is
// reconnected once it is back.
func TestResilienceHTTPDownAtBoot(t *testing.T) {
	mark := newMark(t)
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"web":     map[string]any{"type": "http", "url": url, "timeout": 3000},
		"healthy": markedServer("healthy", mark),
	}})
	opts, changed := listChangedCounter()
	cs := s.client(t, opts)
	waitListed(t, cs, "mcp_healthy_echo")
	st := s.waitServer(t, "web", 10*time.Second, "retrying", func(st serverState) bool { return st.State == "restarting" && st.Restarts >= 1 })
	if st.LastError == "" {
		t.Error("no last error for an unreachable server")
	}
	testutil.Eventually(t, 10*time.Second, "/readyz 200", func() bool { return s.readyz(t) == 200 })
	if listTools(t, cs)["mcp_web_echo"] != nil {
		t.Fatal("unreachable server listed")
	}
	startWeb := func() *proc {
		dir := t.TempDir()
		p := start(t, dir, []string{"GORACE=atexit_sleep_ms=0", markEnv + "=" + mark}, fixture,
			"--name", "web", "--transport", "http", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--ready-file", filepath.Join(dir, "url"))
		waitFile(t, filepath.Join(dir, "url"), 20*time.Second, p)
		return p
	}
	web := startWeb()
	changed.Store(0)
	s.waitServer(t, "web", 30*time.Second, "connected", func(st serverState) bool { return st.State == "ready" })
	testutil.Eventually(t, 5*time.Second, "list_changed for the new tools", func() bool { return changed.Load() > 0 })
	waitListed(t, cs, "mcp_web_echo")
	if res := mustCall(t, cs, "mcp_web_echo", map[string]any{"text": "hi"}); res.IsError {
		t.Errorf("web call: %s", js(res))
	}

	web.stop(5 * time.Second)
	s.waitServer(t, "web", 60*time.Second, "session lost", func(st serverState) bool { return st.State != "ready" })
	healthyEcho(t, cs)
	web = startWeb()
	s.waitServer(t, "web", 60*time.Second, "reconnected", func(st serverState) bool { return st.State == "ready" })
	testutil.Eventually(t, 10*time.Second, "web call after the reconnect", func() bool {
		res, err := callTool(t, cs, "mcp_web_echo", map[string]any{"text": "back"})
		return err == nil && !res.IsError
	})
	web.stop(5 * time.Second)
}

// TestBreakerOpensFailsFastAndCloses: a hung upstream costs each caller
// toolTimeout until the breaker opens; then calls fail fast naming the
// server and the probe time; after the open period a probe closes it.
// Client cancellations never count.
func TestBreakerOpensFailsFastAndCloses(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"sticky": with(markedServer("sticky", mark, "--ignore-cancel"),
			"toolTimeout", 300, "breaker", map[string]any{"failures": 3, "openMs": 2000}),
		"healthy": markedServer("healthy", mark),
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_sticky_hang", "mcp_healthy_echo")

	// Client cancellations first: many more than the threshold, none counted.
	for range 6 {
		_, err, took := callCtx(cs, 100*time.Millisecond, "mcp_sticky_hang", map[string]any{})
		if err == nil || took > 2*time.Second {
			t.Fatalf("cancelled call: %v after %s", err, took)
		}
	}
	time.Sleep(500 * time.Millisecond) // any late upstream outcome would have landed
	if st := s.server(t, "sticky"); st.Breaker != "closed" {
		t.Fatalf("client cancellations tripped the breaker: %+v", st)
	}

	for i := range 3 {
		_, took := wantToolError(t, cs, "mcp_sticky_hang", map[string]any{}, "Tool call timed out after 300ms")
		if took < 300*time.Millisecond || took > 2*time.Second {
			t.Errorf("hang %d cost %s, want about 300ms", i+1, took)
		}
	}
	opened := time.Now()
	st := s.server(t, "sticky")
	if st.Breaker != "open" || st.BreakerProbe.IsZero() {
		t.Fatalf("breaker after 3 timeouts: %+v", st)
	}
	var fast []time.Duration
	for range 5 {
		_, took := wantToolError(t, cs, "mcp_sticky_echo", map[string]any{"text": "x"},
			"server 'sticky' is unavailable: circuit breaker open after 3 consecutive failures, next probe in ~")
		fast = append(fast, took)
	}
	slices.Sort(fast)
	if fast[2] > 50*time.Millisecond {
		t.Errorf("open breaker answered in %v (median %s), want fail-fast", fast, fast[2])
	}
	healthyEcho(t, cs)
	if !strings.Contains(s.Stderr(), "breaker state changed") {
		t.Error("breaker change not logged")
	}

	time.Sleep(time.Until(opened.Add(2100 * time.Millisecond)))
	if st := s.server(t, "sticky"); st.Breaker != "half-open" {
		t.Errorf("breaker %s after the open period, want half-open", st.Breaker)
	}
	if res := mustCall(t, cs, "mcp_sticky_echo", map[string]any{"text": "probe"}); res.IsError {
		t.Fatalf("probe: %s", js(res))
	}
	if st := s.server(t, "sticky"); st.Breaker != "closed" {
		t.Errorf("breaker %s after a good probe", st.Breaker)
	}
}

// TestShutdownDrainsInFlightCalls: SIGTERM lets calls in flight finish,
// stops every child (grandchildren too) and exits 0; a call that outlives
// shutdownTimeout is cut and the exit is still clean and bounded.
func TestShutdownDrainsInFlightCalls(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sleepMS    int
		shutdownMS int
		wantOK     bool
	}{
		{"finish", 1500, 10000, true},
		{"bounded", 60000, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := newMark(t)
			gcFile := filepath.Join(t.TempDir(), "gc")
			s := startSwitchboard(t, map[string]any{
				"shutdownTimeout": tc.shutdownMS,
				"mcpServers": map[string]any{
					"work":    with(markedServer("work", mark, "--spawn-grandchild", gcFile), "toolTimeout", 120000),
					"healthy": markedServer("healthy", mark),
				},
			})
			cs := s.client(t, nil)
			waitListed(t, cs, "mcp_work_sleep", "mcp_healthy_echo")
			readPIDFile(t, gcFile)
			const n = 4
			errs := make(chan error, n)
			for range n {
				go func() {
					res, err, _ := callCtx(cs, 2*time.Minute, "mcp_work_sleep", map[string]any{"ms": tc.sleepMS})
					switch {
					case err != nil:
						errs <- err
					case res.IsError || !strings.Contains(textOf(res), "slept"):
						errs <- fmt.Errorf("result %s", js(res))
					default:
						errs <- nil
					}
				}()
			}
			s.waitServer(t, "work", 10*time.Second, "calls in flight", func(st serverState) bool { return st.InFlight == n })
			start := time.Now()
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if tc.wantOK {
				// While the calls drain, readiness fails so no new traffic comes.
				testutil.Eventually(t, 5*time.Second, "readyz 503 while draining", func() bool {
					resp, err := http.Get("http://" + s.admin + "/readyz")
					if err != nil {
						return false
					}
					resp.Body.Close()
					return resp.StatusCode == http.StatusServiceUnavailable
				})
			}
			code := s.wait(t, 30*time.Second)
			took := time.Since(start)
			if code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			for range n {
				err := <-errs
				if tc.wantOK && err != nil {
					t.Errorf("in-flight call: %v", err)
				}
				if !tc.wantOK && err == nil {
					t.Error("a 60s call finished although shutdownTimeout is 1s")
				}
			}
			if !tc.wantOK && took > time.Duration(tc.shutdownMS)*time.Millisecond+8*time.Second {
				t.Errorf("shutdown took %s with shutdownTimeout %dms", took, tc.shutdownMS)
			}
			if !strings.Contains(s.Stderr(), "stopped") {
				t.Error("no clean stop in the log")
			}
		})
	}
}

// TestResilienceUnderLoad: 2 clients × 16 workers keep calling a healthy
// server while another crashes every second; every healthy call succeeds.
func TestResilienceUnderLoad(t *testing.T) {
	mark := newMark(t)
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, map[string]any{"mcpServers": map[string]any{
		"victim":  with(with(markedServer("victim", mark), "maxRestarts", 1000), "restartBackoff", map[string]any{"initialMs": 50, "maxMs": 1500}),
		"healthy": markedServer("healthy", mark),
	}}, nil)
	clients := []*mcp.ClientSession{s.client(t, nil), s.client(t, nil)}
	waitListed(t, clients[0], "mcp_victim_crash", "mcp_healthy_echo")

	const workers, duration = 16, 8 * time.Second
	stop := time.Now().Add(duration)
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for c, cs := range clients {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(stop); i++ {
					text := fmt.Sprintf("c%d-w%d-%d", c, w, i)
					res, err, _ := callCtx(cs, 30*time.Second, "mcp_healthy_echo", map[string]any{"text": text})
					if err == nil && !res.IsError && strings.Contains(textOf(res), text) {
						ok.Add(1)
						continue
					}
					failed.Add(1)
					if err == nil {
						err = fmt.Errorf("result %s", js(res))
					}
					firstErr.CompareAndSwap(nil, err)
				}
			}()
		}
	}
	crashes := 0
	for time.Now().Before(stop) {
		if st := s.server(t, "victim"); st.State == "ready" {
			_, _, _ = callCtx(clients[1], 10*time.Second, "mcp_victim_crash", map[string]any{})
			crashes++
		}
		time.Sleep(time.Second)
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d healthy calls failed; first: %v", n, n+ok.Load(), firstErr.Load())
	}
	if ok.Load() < 200 {
		t.Errorf("only %d healthy calls in %s", ok.Load(), duration)
	}
	if crashes < 4 {
		t.Errorf("victim crashed only %d times", crashes)
	}
	t.Logf("%d healthy calls, %d victim crashes, %d restarts", ok.Load(), crashes, s.server(t, "victim").Restarts)
}

// TestSoakCrashRestart runs a few hundred crash/restart cycles of a child
// that leaves a grandchild each time, with the backoff shortened by the
// test hook. Afterwards: no zombie, no orphan, switchboard's goroutines
// and memory did not grow with the cycles.
func TestSoakCrashRestart(t *testing.T) {
	const cycles = 300
	mark := newMark(t)
	gcFile := filepath.Join(t.TempDir(), "gc")
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, map[string]any{
		"mcpServers": map[string]any{
			"victim": with(with(markedServer("victim", mark, "--spawn-grandchild", gcFile), "maxRestarts", 100000), "restartBackoff", map[string]any{"initialMs": 1, "maxMs": 30}),
		},
	}, nil, "--log-level", "info") // the captured log stays small over hundreds of cycles
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_victim_crash")

	var warmRSS, warmG int
	start := time.Now()
	pid := 0
	for i := 0; i < cycles; i++ {
		st := s.waitServer(t, "victim", 20*time.Second, fmt.Sprintf("ready (cycle %d)", i), func(st serverState) bool {
			return st.State == "ready" && st.PID != pid && st.PID != 0
		})
		pid = st.PID
		if i == cycles/5 {
			warmRSS, warmG = rssKB(t, s.pid()), s.statusDoc(t).Goroutines
		}
		// A successful call each cycle also keeps the breaker closed: a crash
		// under a call counts as a transport failure.
		if res, err, _ := callCtx(cs, 10*time.Second, "mcp_victim_echo", map[string]any{"text": "cycle"}); err != nil || res.IsError {
			t.Fatalf("cycle %d: call to the restarted server: %v %v", i, err, res)
		}
		if i%2 == 0 {
			_, _, _ = callCtx(cs, 10*time.Second, "mcp_victim_crash", map[string]any{})
		} else {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	st := s.waitServer(t, "victim", 20*time.Second, "ready at the end", func(st serverState) bool { return st.State == "ready" && st.PID != pid })
	t.Logf("%d cycles in %s; restarts %d", cycles, time.Since(start).Round(time.Millisecond), st.Restarts)
	if st.Restarts != cycles {
		t.Errorf("restarts %d, want %d", st.Restarts, cycles)
	}
	if res := mustCall(t, cs, "mcp_victim_echo", map[string]any{"text": "alive"}); res.IsError {
		t.Errorf("after the soak: %s", js(res))
	}
	noZombies(t, s.pid(), 5*time.Second)
	testutil.Eventually(t, 10*time.Second, "only the current child and its grandchild left", func() bool { return len(marked(mark)) == 2 })

	// Let the last cycles' goroutines and garbage settle before comparing.
	var endG int
	testutil.Eventually(t, 10*time.Second, "goroutines back to the warm level", func() bool {
		endG = s.statusDoc(t).Goroutines
		return endG <= warmG+20
	})
	endRSS := rssKB(t, s.pid())
	t.Logf("goroutines %d → %d, RSS %d → %d kB", warmG, endG, warmRSS, endRSS)
	if endRSS > warmRSS*3/2+32<<10 {
		t.Errorf("RSS grew from %d kB to %d kB over %d cycles", warmRSS, endRSS, cycles)
	}
	cs.Close()
	if code, _ := s.terminate(t, 20*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestResilienceLazyServers: lazy servers start on first use; lazyList
// "start" holds the first tools/list until the server is up, "cached"
// answers at once and the tools follow with list_changed.
func TestResilienceLazyServers(t *testing.T) {
	mark := newMark(t)
	dir := t.TempDir()
	held, quick := filepath.Join(dir, "held.pid"), filepath.Join(dir, "quick.pid")
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"held":    with(markedServer("held", mark, "--pid-file", held, "--slow-start", "500ms"), "lazy", true),
		"quick":   with(markedServer("quick", mark, "--pid-file", quick, "--slow-start", "3s"), "lazy", true, "lazyList", "cached", "timeout", 20000),
		"healthy": markedServer("healthy", mark),
	}})
	testutil.Eventually(t, 10*time.Second, "/readyz 200", func() bool { return s.readyz(t) == 200 })
	for _, name := range []string{"held", "quick"} {
		if st := s.server(t, name); st.State != "idle" {
			t.Errorf("lazy %s is %s at boot", name, st.State)
		}
	}
	s.waitServer(t, "healthy", 20*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	if len(marked(mark)) != 1 {
		t.Errorf("lazy servers started at boot: %v", marked(mark))
	}
	opts, changed := listChangedCounter()
	cs := s.client(t, opts)
	start := time.Now()
	tools := listTools(t, cs)
	if tools["mcp_held_echo"] == nil {
		t.Errorf("first tools/list lacks the held lazy server's tools (took %s)", time.Since(start))
	}
	if tools["mcp_quick_echo"] != nil {
		t.Error("the cached lazy server was waited for")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("first tools/list took %s", d)
	}
	readPIDFile(t, held)
	readPIDFile(t, quick)
	testutil.Eventually(t, 30*time.Second, "list_changed with the cached server's tools", func() bool {
		return changed.Load() > 0 && listTools(t, cs)["mcp_quick_echo"] != nil
	})
	if res := mustCall(t, cs, "mcp_quick_echo", map[string]any{"text": "lazy"}); res.IsError {
		t.Errorf("quick: %s", js(res))
	}
}

// TestShutdownDeliversEveryResult: SIGTERM with 50 slow calls in flight
// from clients that do not retry, on /mcp (answers on each POST's stream)
// and on legacy /sse (answers on the GET stream): every result reaches
// its client before switchboard exits.
func TestShutdownDeliversEveryResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		transport func(addr string) mcp.Transport
	}{
		{"mcp", func(addr string) mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}
		}},
		{"sse", func(addr string) mcp.Transport { return &mcp.SSEClientTransport{Endpoint: "http://" + addr + "/sse"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startSwitchboard(t, map[string]any{
				"shutdownTimeout": 20000,
				"mcpServers":      map[string]any{"work": map[string]any{"command": fixture, "args": []string{"--name", "work"}}},
			})
			// Not a context that ends: the SSE client ties its stream to it.
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), tc.transport(s.addr), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			waitListed(t, cs, "mcp_work_sleep")
			const calls, sleepMS = 50, 2000
			results := make(chan error, calls)
			for range calls {
				go func() {
					res, err, _ := callCtx(cs, time.Minute, "mcp_work_sleep", map[string]any{"ms": sleepMS})
					switch {
					case err != nil:
						results <- err
					case res.IsError || !strings.Contains(textOf(res), "slept"):
						results <- fmt.Errorf("result %s", js(res))
					default:
						results <- nil
					}
				}()
			}
			s.waitServer(t, "work", 10*time.Second, "every call in flight", func(st serverState) bool { return st.InFlight == calls })
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := s.wait(t, 30*time.Second); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			delivered := 0
			for range calls {
				if err := <-results; err != nil {
					t.Errorf("call in flight at SIGTERM: %v", err)
				} else {
					delivered++
				}
			}
			t.Logf("%s: %d of %d results delivered across SIGTERM", tc.name, delivered, calls)
		})
	}
}

// TestRestartFailedServer: a stdio server that gave up comes back with
// `switchboard restart NAME` once its cause is fixed, and another with a
// reload of the unchanged config (SIGHUP); an unknown name or a wrong token
// is refused.
func TestRestartFailedServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const token = "admin-token-6b1f0c"
	flaky := func(name string) map[string]any {
		flag := filepath.Join(dir, name+".ok")
		return map[string]any{
			"command": "sh", "args": []string{"-c", "test -f " + flag + " && exec " + fixture + " --name " + name},
			"maxRestarts": 0,
		}
	}
	s := startSwitchboard(t, map[string]any{
		"admin":      map[string]any{"reloadToken": token},
		"mcpServers": map[string]any{"one": flaky("one"), "two": flaky("two")},
	})
	for _, name := range []string{"one", "two"} {
		s.waitServer(t, name, 20*time.Second, "failed", func(st serverState) bool { return st.State == "failed" })
	}
	restart := func(tok string, args ...string) (int, string) {
		cmd := exec.Command(switchboard, append([]string{"restart", "--admin", s.admin, "--token", tok}, args...)...)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := restart(token, "nope"); code == 0 || !strings.Contains(out, `no server "nope"`) {
		t.Errorf("restart of an unknown server: exit %d, %q", code, out)
	}
	if code, out := restart("wrong", "one"); code == 0 || !strings.Contains(out, "refused") {
		t.Errorf("restart with a wrong token: exit %d, %q", code, out)
	}

	// The cause is fixed; nothing happens until someone says so.
	for _, name := range []string{"one", "two"} {
		if err := os.WriteFile(filepath.Join(dir, name+".ok"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := restart(token, "one"); code != 0 {
		t.Fatalf("restart one: exit %d, %s", code, out)
	}
	s.waitServer(t, "one", 20*time.Second, "ready after restart", func(st serverState) bool { return st.State == "ready" })
	if st := s.server(t, "two"); st.State != "failed" {
		t.Errorf("two is %s before anyone restarted it, want failed", st.State)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.waitServer(t, "two", 20*time.Second, "ready after a reload of the unchanged config", func(st serverState) bool { return st.State == "ready" })
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_one_echo", "mcp_two_echo")

	// A running server restarts too: a new process.
	before := s.server(t, "one").PID
	if code, out := restart(token, "one"); code != 0 {
		t.Fatalf("restart of a running server: exit %d, %s", code, out)
	}
	s.waitServer(t, "one", 20*time.Second, "ready with a new process", func(st serverState) bool { return st.State == "ready" && st.PID != before })
}

// TestFaultWedgedChild: a stdio server that wrote half a line and then
// stopped (same PID, never answers again) is found out by the health check
// that follows a call timeout (a ping with a short deadline) and restarted;
// calls work again on a new process.
func TestFaultWedgedChild(t *testing.T) {
	t.Parallel()
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"wedged": map[string]any{"command": fixture, "args": []string{"--name", "wedged", "--freeze-tool"}, "toolTimeout": 1000},
	}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_wedged_freeze", "mcp_wedged_echo")
	before := s.server(t, "wedged").PID
	start := time.Now()
	wantToolError(t, cs, "mcp_wedged_freeze", map[string]any{}, "timed out")
	st := s.waitServer(t, "wedged", 20*time.Second, "ready on a new process", func(st serverState) bool {
		return st.State == "ready" && st.PID != 0 && st.PID != before
	})
	t.Logf("wedged server recycled %s after its call began (toolTimeout 1 s, health check 2 s, then the restart backoff)", time.Since(start).Round(10*time.Millisecond))
	if pidAlive(before) {
		t.Errorf("the wedged process %d still exists", before)
	}
	if res := mustCall(t, cs, "mcp_wedged_echo", map[string]any{"text": "back"}); res.IsError || !strings.Contains(textOf(res), "back") {
		t.Errorf("call after the restart: %s", js(res))
	}
	_ = st
}
