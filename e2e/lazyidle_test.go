package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestLazyIdleTimeout: a lazy server with idleTimeout stops once no call
// went to it for that long (its process exits, /status says idle, its tools
// stay listed) and the next call starts it again, as a new process (#17).
// A neighbour without idleTimeout keeps running. Timings are printed; only
// generous bounds fail the test.
func TestLazyIdleTimeout(t *testing.T) {
	mark := newMark(t)
	const idle = 1500 * time.Millisecond
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"napper":  with(markedServer("napper", mark), "lazy", true, "idleTimeout", idle.Milliseconds()),
		"sleeper": with(markedServer("sleeper", mark), "lazy", true),
	}})
	for _, name := range []string{"napper", "sleeper"} {
		if st := s.server(t, name); st.State != "idle" {
			t.Fatalf("lazy %s is %s at boot", name, st.State)
		}
	}
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_napper_pid", "mcp_sleeper_pid") // the listing starts both
	first := serverPID(t, cs, "mcp_napper_pid")
	sleeper := serverPID(t, cs, "mcp_sleeper_pid")
	// Calls within the timeout keep it up.
	for range 3 {
		time.Sleep(idle / 2)
		if pid := serverPID(t, cs, "mcp_napper_pid"); pid != first {
			t.Fatalf("napper restarted while in use: pid %d, then %d", first, pid)
		}
	}
	lastCall := time.Now()
	st := s.waitServer(t, "napper", idle+10*time.Second, "idle after its timeout", func(st serverState) bool { return st.State == "idle" })
	stopped := time.Since(lastCall)
	testutil.Eventually(t, 10*time.Second, "the idle server's process to exit", func() bool { return !pidAlive(first) })
	if st.PID != 0 {
		t.Errorf("an idle server reports pid %d", st.PID)
	}
	if tools := listTools(t, cs); tools["mcp_napper_echo"] == nil {
		t.Error("the idle server's tools left the list")
	}
	if st := s.server(t, "napper"); st.State != "idle" {
		t.Errorf("a listing started the idle server: %s", st.State)
	}

	restart := time.Now()
	second := serverPID(t, cs, "mcp_napper_pid")
	cold := time.Since(restart)
	if second == first || !pidAlive(second) {
		t.Errorf("after the idle stop the call was served by pid %d (first pid %d)", second, first)
	}
	if st := s.server(t, "napper"); st.State != "ready" || st.PID != second {
		t.Errorf("after the call: %+v, want ready with pid %d", st, second)
	}
	if pid := serverPID(t, cs, "mcp_sleeper_pid"); pid != sleeper {
		t.Errorf("the neighbour without idleTimeout changed pid: %d, then %d", sleeper, pid)
	}
	t.Logf("idleTimeout %s: stopped %s after the last call; pid %d before, %d after; the call that started it again took %s",
		idle, stopped.Round(time.Millisecond), first, second, cold.Round(time.Millisecond))
}

// serverPID calls a fixture's pid tool and returns the number.
func serverPID(t *testing.T, cs *mcp.ClientSession, tool string) int {
	t.Helper()
	res := mustCall(t, cs, tool, map[string]any{})
	if res.IsError {
		t.Fatalf("%s: %s", tool, textOf(res))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(unwrap(textOf(res))))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return pid
}
