package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeSysmonBackoff: serve starts itself again, once and in the same
// process, with GODEBUG=schedtrace set, so the runtime's monitor backs
// off between checks (proxy/internal/sysmon); a GODEBUG that names
// schedtrace is kept as it is.
func TestServeSysmonBackoff(t *testing.T) {
	const period = "schedtrace=2147483647"
	for _, tc := range []struct {
		name, godebug, want, mode string
	}{
		{"default", "", period, "sysmon=backoff"},
		{"other settings kept", "madvdontneed=1", "madvdontneed=1," + period, "sysmon=backoff"},
		{"schedtrace=0 keeps the runtime's default", "schedtrace=0", "schedtrace=0", "sysmon=default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := startSwitchboardIn(t, dir, dir, nil, []string{"GODEBUG=" + tc.godebug})
			checkGODEBUG(t, s.proc, tc.want)
			checkName(t, s.proc)
			cs := s.client(t, nil)
			if tools := listTools(t, cs); len(tools) == 0 {
				t.Error("no tools listed")
			}
			stderr := s.proc.Stderr()
			if n := strings.Count(stderr, "switchboard: starting:"); n != 1 {
				t.Errorf("%d start-up lines, want 1", n)
			}
			if !strings.Contains(stderr, tc.mode) {
				t.Errorf("start-up line lacks %s:\n%s", tc.mode, tail(stderr, 2000))
			}
			if strings.Contains(stderr, "default monitor") {
				t.Errorf("restart failed:\n%s", tail(stderr, 2000))
			}
		})
	}
}

// TestBareCommandSysmonBackoff: switchboard with no command serves, and
// starts itself again as serve does.
func TestBareCommandSysmonBackoff(t *testing.T) {
	p := start(t, t.TempDir(), []string{"GODEBUG=", "SWITCHBOARD_LISTEN=127.0.0.1:0", "SWITCHBOARD_ADMIN_LISTEN=127.0.0.1:0"}, switchboard)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.Stderr(), "switchboard: starting:") {
		if time.Now().After(deadline) {
			t.Fatalf("no start-up line after 30 s:\n%s", tail(p.Stderr(), 2000))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(p.Stderr(), "sysmon=backoff") {
		t.Errorf("start-up line lacks sysmon=backoff:\n%s", tail(p.Stderr(), 2000))
	}
	checkGODEBUG(t, p, "schedtrace=2147483647")
	checkName(t, p)
}

// checkName checks that p's running process still has its binary's name
// (what ps, top and pgrep show) after starting itself again.
func checkName(t *testing.T, p *proc) {
	t.Helper()
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(comm)), filepath.Base(switchboard); got != want {
		t.Errorf("the running switchboard is named %q, want %q", got, want)
	}
}

// checkGODEBUG checks the GODEBUG of p's running process, read from
// /proc: exactly one, and want.
func checkGODEBUG(t *testing.T, p *proc, want string) {
	t.Helper()
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for kv := range bytes.SplitSeq(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("GODEBUG=")); ok {
			got = append(got, string(v))
		}
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("the running switchboard has GODEBUG %q, want one: %q", got, want)
	}
}
