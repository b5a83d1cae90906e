package proxy

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, filepath.Base(path), func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

// TestReloadNotHeldByPendingStart: a reload that changes a server whose new
// process is still starting does not hold the next one (#reliability-3,
// item 3). A policy change written after it applies while the start is
// pending, the old process serving; the new one is swapped in once up. A
// config that reverts a pending change drops its start and applies at once.
func TestReloadNotHeldByPendingStart(t *testing.T) {
	var logs lineLog
	deny := map[string]any{"tools": map[string]any{"deny": []string{"mcp_echo_sleep"}}}
	tp := startProxyWith(t, pipelineConfig(nil, nil, nil), "http", func(o *Options) {
		o.Stderr = io.MultiWriter(&logs, &tlogWriter{t: t})
	})
	cs := tp.connect(t, nil, nil)
	waitTool(t, cs, "mcp_echo_sleep")
	before := waitStatus(t, tp.admin, "a server with a pid", func(st StatusReport) bool {
		return len(st.Servers) == 1 && st.Servers[0].PID != 0
	})
	echo := func(when string) {
		t.Helper()
		if res, err := call(cs, "mcp_echo_echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
			t.Errorf("call %s: %+v, %v", when, res, err)
		}
	}

	// The change's new process waits at the gate: its start is pending.
	gate := filepath.Join(t.TempDir(), "gate")
	writeConfig(t, tp.path, pipelineConfig(nil, map[string]any{startGateEnv: gate}, nil))
	waitFile(t, gate+".waiting")
	writeConfig(t, tp.path, pipelineConfig(nil, map[string]any{startGateEnv: gate}, deny))
	st := waitStatus(t, tp.admin, "the policy change applied while the start is pending", func(st StatusReport) bool {
		return st.LastReload != nil && st.LastReload.OK && st.Gen > before.Gen
	})
	if !slices.Equal(st.LastReload.Pending, []string{"echo"}) || st.Servers[0].PID != before.Servers[0].PID {
		t.Errorf("want the old process serving and echo pending; last reload %+v, servers %+v", st.LastReload, st.Servers)
	}
	if _, err := call(cs, "mcp_echo_sleep", map[string]any{"ms": 1}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("denied tool called: %v", err)
	}
	echo("while the start is pending")

	openGate(t, gate)
	// The swap publishes the new process, then trims lastReload.pending:
	// both are waited for.
	waitStatus(t, tp.admin, "the new process swapped in and no start pending", func(st StatusReport) bool {
		return len(st.Servers) == 1 && st.Servers[0].PID != 0 && st.Servers[0].PID != before.Servers[0].PID &&
			st.LastReload != nil && len(st.LastReload.Pending) == 0
	})
	up := status(t, tp.admin)
	echo("after the swap")

	// A change, then its revert: the pending start is dropped.
	gate2 := filepath.Join(t.TempDir(), "gate")
	writeConfig(t, tp.path, pipelineConfig(nil, map[string]any{startGateEnv: gate2}, deny))
	waitFile(t, gate2+".waiting")
	writeConfig(t, tp.path, pipelineConfig(nil, map[string]any{startGateEnv: gate}, nil))
	reverted := waitStatus(t, tp.admin, "the revert applied", func(st StatusReport) bool {
		return st.LastReload != nil && st.LastReload.OK && st.Gen > up.Gen
	})
	if len(reverted.LastReload.Pending) != 0 || reverted.Servers[0].PID != up.Servers[0].PID {
		t.Errorf("after the revert: last reload %+v, servers %+v (pid was %d)", reverted.LastReload, reverted.Servers, up.Servers[0].PID)
	}
	waitLog(t, &logs, "pending upstream start dropped")
	if _, err := call(cs, "mcp_echo_sleep", map[string]any{"ms": 1}); err != nil {
		t.Errorf("the revert's allowed tool: %v", err)
	}
}
