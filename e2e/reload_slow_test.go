package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestReloadNotHeldBySlowStart: a corrective config pushed 1 s after one
// whose changed server starts slowly (it hangs before initialize for 30 s)
// applies within 2 s, not once that start ends (#reliability-3, item 3):
// the emergency tools.deny it adds takes effect and /status records it,
// while the server's old process keeps serving. A config that then
// reverts the slow change applies at once too and stops the pending
// process. A change whose start is short is swapped in when it is up.
func TestReloadNotHeldBySlowStart(t *testing.T) {
	dir := t.TempDir()
	pending := filepath.Join(dir, "pending.pid")
	cfg := func(slow map[string]any, deny ...string) map[string]any {
		c := map[string]any{"mcpServers": map[string]any{"slow": slow, "other": fixtureServer("other")}}
		if len(deny) > 0 {
			c["tools"] = map[string]any{"deny": deny}
		}
		return c
	}
	fast := fixtureServer("slow")
	slowStart := func(d string) map[string]any {
		return with(fixtureServer("slow", "--slow-start", d, "--pid-file", pending), "timeout", 60000)
	}
	s := startSwitchboard(t, cfg(fast))
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "both listed", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_slow_pid"] != nil && tools["mcp_other_echo"] != nil
	})
	oldPID := pidOf(t, cs, "mcp_slow_pid")
	denied := func() bool {
		_, err := callTool(t, cs, "mcp_other_echo", map[string]any{"text": "x"})
		return err != nil && strings.Contains(err.Error(), `unknown tool "mcp_other_echo"`) && listTools(t, cs)["mcp_other_echo"] == nil
	}

	// The slow change: its new process starts and hangs.
	replaceByRename(t, s.config, cfg(slowStart("30s")))
	pid, err := strconv.Atoi(waitFile(t, pending, 10*time.Second, s.proc))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the corrective update comes 1 s later, as in the report
	replaceByRename(t, s.config, cfg(slowStart("30s"), "mcp_other_echo"))
	pushed := time.Now()
	testutil.Eventually(t, 2*time.Second, "the corrective tools.deny applied", func() bool {
		lr := s.lastReload(t)
		return lr["ok"] == true && s.gen(t) == 2 && denied()
	})
	t.Logf("corrective reload applied %v after it was written", time.Since(pushed).Round(time.Millisecond))
	if lr := s.lastReload(t); fmt.Sprint(lr["pending"]) != "[slow]" {
		t.Errorf("lastReload does not name the pending start: %v", lr)
	}
	if got := pidOf(t, cs, "mcp_slow_pid"); got != oldPID {
		t.Errorf("slow answered from pid %d while its new process starts; want the old one, %d", got, oldPID)
	}
	if !pidAlive(pid) {
		t.Errorf("the pending start (pid %d) was stopped by a reload that kept it", pid)
	}

	// Reverting the slow change drops its pending start.
	replaceByRename(t, s.config, cfg(fast, "mcp_other_echo"))
	reverted := time.Now()
	testutil.Eventually(t, 2*time.Second, "the revert applied", func() bool {
		lr := s.lastReload(t)
		return lr["ok"] == true && lr["pending"] == nil && s.gen(t) >= 3
	})
	t.Logf("revert applied %v after it was written", time.Since(reverted).Round(time.Millisecond))
	testutil.Eventually(t, 10*time.Second, "the pending process stopped", func() bool { return !pidAlive(pid) })
	if got := pidOf(t, cs, "mcp_slow_pid"); got != oldPID {
		t.Errorf("the revert restarted slow: pid %d -> %d", oldPID, got)
	}
	if !denied() {
		t.Error("the revert lost the tools.deny it kept")
	}

	// A short slow start, superseded by a policy change: the change
	// applies at once, and the new process is swapped in once it is up.
	replaceByRename(t, s.config, cfg(slowStart("3s"), "mcp_other_echo"))
	testutil.Eventually(t, 10*time.Second, "the new slow process started", func() bool {
		b, _ := os.ReadFile(pending)
		return len(b) > 0 && string(b) != strconv.Itoa(pid)
	})
	replaceByRename(t, s.config, cfg(slowStart("3s")))
	testutil.Eventually(t, 2*time.Second, "the deny lifted", func() bool {
		res, err := callTool(t, cs, "mcp_other_echo", map[string]any{"text": "back"})
		return err == nil && !res.IsError
	})
	testutil.Eventually(t, 20*time.Second, "the new process swapped in", func() bool { return pidOf(t, cs, "mcp_slow_pid") != oldPID })
	testutil.Eventually(t, 15*time.Second, "the old process stopped", func() bool { return !pidAlive(oldPID) })
	if lr := s.lastReload(t); lr["pending"] != nil {
		t.Errorf("last reload still names pending starts: %v", lr)
	}
}
