//go:build unix

package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/internal/testutil"
)

// These tests start real children (this test binary, as the helper server
// of TestMain), because only a real process shows what Close, SIGTERM,
// process groups and stderr do.

// childSpec runs the helper server as a stdio child with extra env.
func childSpec(t *testing.T, name string, env map[string]string) upstream.Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{serverEnv: name, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return upstream.Spec{
		Name: name, Transport: upstream.TransportStdio, Command: exe, Env: e,
		ConnectTimeout: 20 * time.Second, CallTimeout: 10 * time.Second,
		RestartOnCrash: true, MaxRestarts: 5,
	}
}

func startHandle(t *testing.T, spec upstream.Spec, opt upstream.Options) *upstream.Handle {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger, _ = testLogger(t)
	}
	h := upstream.New(spec, opt)
	h.Start()
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func waitState(t *testing.T, h *upstream.Handle, d time.Duration, want upstream.State) upstream.Status {
	t.Helper()
	var st upstream.Status
	testutil.Eventually(t, d, "state "+string(want), func() bool {
		st = h.Status()
		return st.State == want
	})
	return st
}

func callText(t *testing.T, h *upstream.Handle, tool string) string {
	t.Helper()
	res, err := h.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}, nil)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("call %s: empty result", tool)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestStdioLifecycle(t *testing.T) {
	checkGoroutines(t)
	var changes int
	h := upstream.New(childSpec(t, "life", nil), upstream.Options{OnChange: func(*upstream.Handle) { changes++ }})
	h.Start()
	st := waitState(t, h, 20*time.Second, upstream.StateReady)
	if st.PID == 0 || !pidAlive(st.PID) {
		t.Fatalf("ready without a live pid: %+v", st)
	}
	if got := callText(t, h, "pid"); got != strconv.Itoa(st.PID) {
		t.Errorf("pid tool says %s, status says %d", got, st.PID)
	}
	if c := h.Catalog(); c == nil || len(c.Tools) != 6 {
		t.Errorf("catalog: %+v", c)
	}
	select {
	case <-h.FirstAttempt():
	default:
		t.Error("first attempt not marked finished after ready")
	}
	start := time.Now()
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The child exits on stdin EOF: no signal, no grace period needed.
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("close took %s for a child that exits on EOF", d)
	}
	if pidAlive(st.PID) {
		t.Errorf("child %d survived Close", st.PID)
	}
	if h.Catalog() != nil || h.Status().State != upstream.StateStopped {
		t.Errorf("after Close: %+v", h.Status())
	}
	_ = h.Close(context.Background()) // idempotent
	_, err := h.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"}, nil)
	if !errors.Is(err, upstream.ErrUnavailable) {
		t.Errorf("call after Close: %v", err)
	}
	if changes == 0 {
		t.Error("OnChange never called")
	}
}

func TestStdioCrashRestarts(t *testing.T) {
	checkGoroutines(t)
	spec := childSpec(t, "crashy", nil)
	spec.BackoffInitial = 50 * time.Millisecond
	h := startHandle(t, spec, upstream.Options{})
	first := waitState(t, h, 20*time.Second, upstream.StateReady)
	_, err := h.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}}, nil)
	var ue *upstream.UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "connection lost") {
		t.Fatalf("crash call: want a connection-lost UnavailableError, got %v", err)
	}
	var second upstream.Status
	testutil.Eventually(t, 20*time.Second, "a new process", func() bool {
		second = h.Status()
		return second.State == upstream.StateReady && second.PID != first.PID && second.PID != 0
	})
	if second.Restarts != 1 || second.Failures != 1 {
		t.Errorf("restarts %d, failures %d, want 1 and 1", second.Restarts, second.Failures)
	}
	if !strings.Contains(second.LastError, "session ended") {
		t.Errorf("last error %q", second.LastError)
	}
	if pidAlive(first.PID) {
		t.Errorf("crashed child %d not reaped", first.PID)
	}
	if got := callText(t, h, "pid"); got != strconv.Itoa(second.PID) {
		t.Errorf("call after restart reached pid %s, want %d", got, second.PID)
	}
}

func TestStdioExitAtStartGivesUp(t *testing.T) {
	checkGoroutines(t)
	spec := childSpec(t, "dead", map[string]string{"UPSTREAM_TEST_EXIT": "7", "UPSTREAM_TEST_STDERR": "starting|Error: Cannot find module 'foo'"})
	spec.MaxRestarts = 2
	spec.BackoffInitial = 10 * time.Millisecond
	h := startHandle(t, spec, upstream.Options{})
	st := waitState(t, h, 20*time.Second, upstream.StateFailed)
	if st.Restarts != 2 || st.Failures != 3 {
		t.Errorf("restarts %d failures %d, want 2 and 3", st.Restarts, st.Failures)
	}
	if !strings.Contains(st.LastError, "process exited before initialize finished") {
		t.Errorf("last error %q", st.LastError)
	}
	if h.Catalog() != nil {
		t.Error("failed server keeps a catalog")
	}
	// The cause is in the server's stderr, kept with its status (issue 18).
	if tail := st.StderrTail; len(tail) == 0 || tail[len(tail)-1] != "Error: Cannot find module 'foo'" || tail[0] != "starting" {
		t.Errorf("stderr tail %q, want the child's lines of every attempt ending in its error", tail)
	}
	_, err := h.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"}, nil)
	if err == nil || !strings.Contains(err.Error(), "server 'dead' failed: connect: process exited before initialize finished") {
		t.Errorf("call to a failed server: %v", err)
	}
}

func TestStdioCloseEscalatesToSIGKILL(t *testing.T) {
	checkGoroutines(t)
	t.Cleanup(upstream.SetStopTimings(100*time.Millisecond, 300*time.Millisecond)) // after the handle closed
	h := startHandle(t, childSpec(t, "stubborn", map[string]string{"UPSTREAM_TEST_IGNORE_TERM": "1"}), upstream.Options{})
	st := waitState(t, h, 20*time.Second, upstream.StateReady)
	start := time.Now()
	_ = h.Close(context.Background())
	d := time.Since(start)
	if d < 400*time.Millisecond || d > 5*time.Second {
		t.Errorf("close took %s, want grace+term (400ms) before SIGKILL", d)
	}
	if pidAlive(st.PID) {
		t.Errorf("child %d survived SIGKILL", st.PID)
	}
}

func TestStdioStopKillsGrandchildren(t *testing.T) {
	checkGoroutines(t)
	dir := t.TempDir()
	for _, how := range []string{"close", "crash"} {
		t.Run(how, func(t *testing.T) {
			gcFile := filepath.Join(dir, how+".pid")
			spec := childSpec(t, "parent-"+how, map[string]string{"UPSTREAM_TEST_GRANDCHILD": gcFile})
			spec.RestartOnCrash = false
			h := startHandle(t, spec, upstream.Options{})
			st := waitState(t, h, 20*time.Second, upstream.StateReady)
			gc := readPID(t, gcFile)
			if !pidAlive(gc) {
				t.Fatalf("grandchild %d not running", gc)
			}
			if pgid, _ := syscall.Getpgid(gc); pgid != st.PID {
				t.Errorf("grandchild in group %d, want the child's own group %d", pgid, st.PID)
			}
			if how == "close" {
				_ = h.Close(context.Background())
			} else {
				_ = syscall.Kill(st.PID, syscall.SIGKILL)
				waitState(t, h, 10*time.Second, upstream.StateFailed)
			}
			testutil.Eventually(t, 5*time.Second, "grandchild gone", func() bool { return !pidAlive(gc) })
			if pidAlive(st.PID) {
				t.Errorf("child %d alive", st.PID)
			}
		})
	}
}

func TestStdioConnectTimeoutStopsChild(t *testing.T) {
	checkGoroutines(t)
	t.Cleanup(upstream.SetStopTimings(100*time.Millisecond, 300*time.Millisecond)) // after the handle closed
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := childSpec(t, "slow", map[string]string{"UPSTREAM_TEST_SLOW": "1h", "UPSTREAM_TEST_PIDFILE": pidFile, "UPSTREAM_TEST_IGNORE_TERM": "1"})
	spec.ConnectTimeout = 2 * time.Second // long enough for a loaded machine to start the child
	spec.MaxRestarts = 0
	start := time.Now()
	h := startHandle(t, spec, upstream.Options{})
	st := waitState(t, h, 20*time.Second, upstream.StateFailed)
	// timeout + grace + term, not the SDK's TerminateDuration twice over.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failed after %s, want about 2.4s", d)
	}
	if !strings.Contains(st.LastError, "connect timeout") {
		t.Errorf("last error %q", st.LastError)
	}
	if pid := readPID(t, pidFile); pidAlive(pid) {
		t.Errorf("child %d still running after its connect timed out", pid)
	}
}

func TestStdioStderrRelogged(t *testing.T) {
	checkGoroutines(t)
	log, out := testLogger(t)
	lines := strings.Join([]string{
		"hello from stderr",
		"[ERROR] something broke",
		`{"@level":"error","@message":"json error"}`,
		"panic: boom",
		"goroutine 1 [running]:",
	}, "|")
	h := startHandle(t, childSpec(t, "noisy", map[string]string{"UPSTREAM_TEST_STDERR": lines}), upstream.Options{Logger: log})
	waitState(t, h, 20*time.Second, upstream.StateReady)
	_ = h.Close(context.Background())
	got := out.String()
	for _, want := range []string{
		`[INFO]  test.noisy: stderr: line="hello from stderr"`,
		`[ERROR] test.noisy: stderr: line="[ERROR] something broke"`,
		`[ERROR] test.noisy: stderr: line="{\"@level\":\"error\",\"@message\":\"json error\"}"`,
		`[ERROR] test.noisy: stderr: line="panic: boom"`,
		`[ERROR] test.noisy: stderr: line="goroutine 1 [running]:"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s", want)
		}
	}
}

func TestStdioCallTimeoutCancelsUpstream(t *testing.T) {
	checkGoroutines(t)
	log, out := testLogger(t)
	spec := childSpec(t, "hung", nil)
	spec.CallTimeout = 200 * time.Millisecond
	h := startHandle(t, spec, upstream.Options{Logger: log})
	waitState(t, h, 20*time.Second, upstream.StateReady)
	start := time.Now()
	_, err := h.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}}, nil)
	if err == nil || err.Error() != "Tool call timed out after 200ms" {
		t.Fatalf("want the timeout error, got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timed-out call took %s", d)
	}
	// The child saw the cancellation and said so on stderr.
	testutil.Eventually(t, 5*time.Second, "cancellation reached the child", func() bool {
		return strings.Contains(out.String(), `line="hang cancelled"`)
	})
}

// TestStdioNoiseOnStdoutSkipped: lines on stdout that are not JSON-RPC
// (banners, log lines) are logged and skipped; the session goes on.
func TestStdioNoiseOnStdoutSkipped(t *testing.T) {
	checkGoroutines(t)
	log, out := testLogger(t)
	h := startHandle(t, childSpec(t, "noisy", nil), upstream.Options{Logger: log})
	first := waitState(t, h, 20*time.Second, upstream.StateReady)
	for range 3 {
		if got := callText(t, h, "noisy"); got != "still here" {
			t.Fatalf("noisy call answered %q", got)
		}
	}
	if st := h.Status(); st.PID != first.PID || st.Restarts != 0 {
		t.Errorf("the session did not survive the noise: %+v", st)
	}
	for _, want := range []string{`stdout line skipped: not JSON-RPC: line="server ready on stdio"`, `line="{\"level\":\"info\"`} {
		testutil.Eventually(t, 5*time.Second, "log line "+want, func() bool { return strings.Contains(out.String(), want) })
	}
}

// TestStdioBrokenConnectionStopsChildPromptly: a child writes a line longer
// than the connection accepts and then neither answers nor exits. The call
// fails with a connection error that is not EOF; the supervisor confirms the
// connection is dead and stops the child with its own sequence, instead of
// waiting out the stdin-EOF wait first.
func TestStdioBrokenConnectionStopsChildPromptly(t *testing.T) {
	checkGoroutines(t)
	t.Cleanup(upstream.SetMaxLine(1 << 20))
	t.Cleanup(upstream.SetStopTimings(100*time.Millisecond, 300*time.Millisecond)) // after the handle closed
	spec := childSpec(t, "garbler", map[string]string{"UPSTREAM_TEST_IGNORE_TERM": "1"})
	spec.RestartOnCrash = false
	h := startHandle(t, spec, upstream.Options{})
	first := waitState(t, h, 20*time.Second, upstream.StateReady)
	_, err := h.CallTool(context.Background(), &mcp.CallToolParams{Name: "garble", Arguments: map[string]any{}}, nil)
	start := time.Now()
	if err == nil || !strings.Contains(err.Error(), "server 'garbler' is unavailable: connection lost during the call") {
		t.Fatalf("want a connection-lost UnavailableError, got %v", err)
	}
	testutil.Eventually(t, 10*time.Second, "child stopped", func() bool { return !pidAlive(first.PID) })
	// Ours: 250ms grace for the session's end, then 100ms + 300ms to
	// SIGKILL. The SDK alone: 1.4s for stdin EOF, 1.4s after SIGTERM.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("child stopped %s after the broken call", d)
	}
	waitState(t, h, 10*time.Second, upstream.StateFailed)
}

// pidAlive reports whether a process exists and is not a zombie.
func pidAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return runtime.GOOS != "linux" && syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
