package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestFirstContactLogs runs the binary as a first try would: a few real
// servers (every fixture lists the same resource URI), one whose command
// is not installed and one whose secret is not set ("First contact",
// items 5 and 6). The broken two are failed at their first attempt with
// one error line each and no restarts; the collision is logged once and
// listed in /status; a reload that keeps every server logs no warning
// again.
func TestFirstContactLogs(t *testing.T) {
	t.Parallel()
	servers := func(timeout int) map[string]any {
		return map[string]any{
			"a":        with(fixtureServer("a"), "toolTimeout", timeout),
			"b":        with(fixtureServer("b"), "toolTimeout", timeout),
			"c":        with(fixtureServer("c"), "toolTimeout", timeout),
			"nocmd":    map[string]any{"command": "switchboard-e2e-no-such-command"},
			"nosecret": with(fixtureServer("nosecret"), "env", map[string]string{"TOKEN": "secret://env/SWITCHBOARD_E2E_UNSET"}),
		}
	}
	cfg := map[string]any{"mcpServers": servers(60000)}
	s := startSwitchboard(t, cfg)
	for _, name := range []string{"a", "b", "c"} {
		s.waitServer(t, name, 20*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	}
	for name, want := range map[string]string{"nocmd": "executable file not found", "nosecret": "SWITCHBOARD_E2E_UNSET is not set"} {
		st := s.waitServer(t, name, 20*time.Second, "failed", func(st serverState) bool { return st.State == "failed" })
		if st.Restarts != 0 || st.Failures != 1 || !strings.Contains(st.LastError, want) {
			t.Errorf("%s: restarts %d, failures %d, last error %q; want failed at once with %q", name, st.Restarts, st.Failures, st.LastError, want)
		}
	}
	// A server's state is shown ready before the views it joins are built.
	testutil.Eventually(t, 10*time.Second, "the collision in /status", func() bool {
		cols, _ := s.status(t)["collisions"].([]any)
		return len(cols) == 1 && strings.Contains(js(cols[0]), `"losers":[{"server":"b"},{"server":"c"}]`)
	})
	if col := js(s.status(t)["collisions"]); !strings.Contains(col, `"name":"fixture://static/hello"`) || !strings.Contains(col, `"winner":"a"`) {
		t.Errorf("/status collisions: %s", col)
	}

	cfg["mcpServers"] = servers(61000)
	rewrite(t, s.config, cfg)
	s.waitGen(t, 2)
	// The reload retries the failed servers, once each.
	for _, name := range []string{"nocmd", "nosecret"} {
		testutil.Eventually(t, 20*time.Second, name+" retried by the reload", func() bool {
			return strings.Count(s.Stderr(), "upstream."+name+": upstream failed") == 2
		})
	}
	logs := s.Stderr()
	if n := strings.Count(logs, "name collisions"); n != 1 {
		t.Errorf("%d collision lines, want 1", n)
	}
	if strings.Contains(logs, "upstream restart") {
		t.Error("a failure that retrying cannot fix was retried")
	}
	seen := map[string]bool{}
	for line := range strings.SplitSeq(logs, "\n") {
		_, msg, ok := strings.Cut(line, "[WARN]")
		if !ok {
			continue
		}
		if seen[msg] {
			t.Errorf("logged twice: %s", msg)
		}
		seen[msg] = true
	}
	t.Logf("%d log lines, %d warnings", strings.Count(logs, "\n"), len(seen))
}
