//go:build linux

package upstream_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/internal/testutil"
)

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// readPIDs waits for a file of space-separated PIDs to hold n of them.
func readPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	testutil.Eventually(t, 10*time.Second, "pids in "+path, func() bool {
		b, _ := os.ReadFile(path)
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
		return len(pids) == n
	})
	return pids
}

// killAtCleanup makes sure a test leaves none of pids behind.
func killAtCleanup(t *testing.T, pids ...int) {
	t.Cleanup(func() {
		for _, p := range pids {
			if alive(p) {
				t.Errorf("process %d left behind", p)
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
	})
}

// treeScript starts a grandchild in the server's group and one that left it
// with setsid, writes their PIDs and the server's to pids, then runs tail.
func treeScript(pids, tail string) string {
	return fmt.Sprintf(`sleep 1000 & a=$!; setsid sleep 1000 & b=$!; echo $$ $a $b > %s.tmp; mv %s.tmp %s; %s`, pids, pids, pids, tail)
}

func TestShimEndsTheWayTheServerDid(t *testing.T) {
	for _, c := range []struct {
		name string
		tail string
		want func(syscall.WaitStatus) bool
	}{
		{"exit code", "exit 3", func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 3 }},
		{"signal", "kill -SEGV $$", func(ws syscall.WaitStatus) bool {
			return ws.Signaled() && ws.Signal() == syscall.SIGSEGV && !ws.CoreDump()
		}},
		{"killed", "kill -KILL $$", func(ws syscall.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGKILL }},
	} {
		t.Run(c.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pids")
			cmd, pid, err := upstream.StartShim("/bin/sh", []string{"-c", treeScript(pidFile, "read x; "+c.tail)})
			if err != nil {
				t.Fatal(err)
			}
			pids := readPIDs(t, pidFile, 3)
			killAtCleanup(t, pids...)
			if pids[0] != pid {
				t.Errorf("shim reported PID %d, the server is %d", pid, pids[0])
			}
			err = cmd.Wait() // stdin is /dev/null: read returns at once
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !c.want(ee.Sys().(syscall.WaitStatus)) {
				t.Errorf("shim ended with %v", err)
			}
			for _, p := range pids {
				if alive(p) {
					t.Errorf("process %d outlived the server", p)
				}
			}
		})
	}
}

func TestShimReportsStartError(t *testing.T) {
	_, _, err := upstream.StartShim(filepath.Join(t.TempDir(), "missing"), nil)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("start error %v", err)
	}
}

// TestShimKillsTreeWhenSwitchboardIsKilled: SIGKILL of the shim's parent
// ends the server (which ignores SIGTERM), its group and a grandchild that
// left the group with setsid, within the shim's grace. See #17.
func TestShimKillsTreeWhenSwitchboardIsKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pids")
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), "UPSTREAM_TEST_SERVER=shimparent",
		"UPSTREAM_TEST_SCRIPT="+treeScript(pidFile, `trap "" TERM; while :; do sleep 1; done`))
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, pidFile, 3)
	killAtCleanup(t, pids...)
	start := time.Now()
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	testutil.Eventually(t, 5*time.Second, "the tree to go", func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	})
	t.Logf("tree of %d gone %s after SIGKILL of its switchboard", len(pids), time.Since(start).Round(time.Millisecond))
}
