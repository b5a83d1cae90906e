package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// Process bookkeeping for the resilience tests. Every upstream a test starts
// carries a unique E2E_MARK in its environment, which its own children
// inherit; scanning /proc for the mark finds whatever the test's switchboard
// started, however deep, without confusing it with other tests' processes.

const markEnv = "E2E_MARK"

// procInfo is one line of /proc/<pid>/stat.
type procInfo struct {
	pid, ppid, pgid int
	state           byte
	comm            string
}

func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < 0 || closing+2 >= len(s) {
		return procInfo{}, false
	}
	f := strings.Fields(s[closing+2:])
	if len(f) < 3 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0], comm: s[open+1 : closing]}, true
}

func allProcs() []procInfo {
	ents, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// newMark returns a fresh mark for a test's upstreams. After the test (and
// after its switchboard stopped: cleanups run last-registered first, so call
// this before starting switchboard) it fails if any marked process is left.
func newMark(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("process accounting reads /proc")
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	mark := t.Name() + "-" + hex.EncodeToString(b)
	mark = strings.NewReplacer("/", "_", " ", "_").Replace(mark)
	t.Cleanup(func() {
		if left := waitNoMarked(mark, 10*time.Second); len(left) > 0 {
			t.Errorf("processes left behind: %v", left)
			for _, p := range left {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	return mark
}

// marked lists the live (not zombie) processes carrying mark, without the
// shims switchboard starts its stdio servers under on Linux (which carry the
// server's environment).
func marked(mark string) []procInfo {
	var out []procInfo
	for _, p := range markedAll(mark) {
		if !isShim(p.pid) {
			out = append(out, p)
		}
	}
	return out
}

// shimCommand is switchboard's hidden subcommand that runs a stdio server
// under a shim.
const shimCommand = "upstream-shim"

// isShim reports whether pid is a switchboard shim, from its command line.
func isShim(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(b), "\x00")
	return len(args) > 1 && args[1] == shimCommand
}

// markedAll lists the live (not zombie) processes carrying mark, shims
// included.
func markedAll(mark string) []procInfo {
	needle := []byte(markEnv + "=" + mark + "\x00")
	var out []procInfo
	for _, p := range allProcs() {
		if p.state == 'Z' {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.pid))
		if err != nil {
			continue
		}
		if bytes.Contains(append(env, 0), needle) {
			out = append(out, p)
		}
	}
	return out
}

func waitNoMarked(mark string, d time.Duration) []procInfo {
	deadline := time.Now().Add(d)
	for {
		left := markedAll(mark)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// zombiesOf lists the zombie children of pid.
func zombiesOf(pid int) []procInfo {
	var out []procInfo
	for _, p := range allProcs() {
		if p.ppid == pid && p.state == 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// noZombies fails unless pid has no zombie children within d (a child that
// just died is a zombie until it is waited for).
func noZombies(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		z := zombiesOf(pid)
		if len(z) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("zombie children of %d: %v", pid, z)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statusKB reads a field in kB of a process's /proc status file (VmRSS,
// RssAnon, RssFile), or -1.
func statusKB(pid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// mustStatusKB is statusKB, failing the test when the field is missing.
func mustStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	n := statusKB(pid, field)
	if n < 0 {
		t.Fatalf("no %s for %d", field, pid)
	}
	return n
}

// rssKB reads a process's resident set size.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	return mustStatusKB(t, pid, "VmRSS")
}

// markedServer is a config entry that runs the fixture over stdio, marked
// for process accounting, with race-built binaries exiting at once.
func markedServer(name, mark string, args ...string) map[string]any {
	return map[string]any{
		"command": fixture,
		"args":    append([]string{"--name", name}, args...),
		"env":     map[string]string{"GORACE": "atexit_sleep_ms=0", markEnv: mark},
	}
}

// with returns m with extra keys.
func with(m map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(m)+len(kv)/2)
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// serverState is one server's entry of /status, typed.
type serverState struct {
	Name         string    `json:"name"`
	State        string    `json:"state"`
	PID          int       `json:"pid"`
	Restarts     int       `json:"restarts"`
	Failures     int       `json:"consecutiveFailures"`
	LastError    string    `json:"lastError"`
	NextAttempt  time.Time `json:"nextAttempt"`
	Breaker      string    `json:"breaker"`
	BreakerProbe time.Time `json:"breakerProbe"`
	Tools        int       `json:"tools"`
	InFlight     int       `json:"inFlight"`
	Uptime       float64   `json:"uptimeSeconds"`
}

type statusDoc struct {
	Gen        int           `json:"gen"`
	Goroutines int           `json:"goroutines"`
	Servers    []serverState `json:"servers"`
}

func (s *sb) statusDoc(t *testing.T) statusDoc {
	t.Helper()
	resp, err := http.Get("http://" + s.admin + "/status")
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	defer resp.Body.Close()
	var d statusDoc
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatalf("status: %v", err)
	}
	return d
}

func (s *sb) server(t *testing.T, name string) serverState {
	t.Helper()
	for _, st := range s.statusDoc(t).Servers {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no server %q in /status", name)
	return serverState{}
}

// waitServer polls /status until cond holds for the named server.
func (s *sb) waitServer(t *testing.T, name string, d time.Duration, what string, cond func(serverState) bool) serverState {
	t.Helper()
	var st serverState
	deadline := time.Now().Add(d)
	for {
		st = s.server(t, name)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s %s; last status %+v", d, name, what, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readyz returns the HTTP status of /readyz.
func (s *sb) readyz(t *testing.T) int {
	t.Helper()
	resp, err := http.Get("http://" + s.admin + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// healthz returns the HTTP status of /healthz.
func (s *sb) healthz(t *testing.T) int {
	t.Helper()
	resp, err := http.Get("http://" + s.admin + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (s *sb) pid() int { return s.cmd.Process.Pid }

// terminate sends SIGTERM and waits for a clean exit.
func (s *sb) terminate(t *testing.T, d time.Duration) (code int, took time.Duration) {
	t.Helper()
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code = s.wait(t, d)
	return code, time.Since(start)
}

func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testutil.Eventually(t, 20*time.Second, "pid file "+filepath.Base(path), func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}
