package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestIdleReleasesBinaryPages: once a burst of calls is over, switchboard
// drops the pages of its binary from its resident set, and the next call
// maps what it runs back. Its file-backed resident memory (RssFile) is the
// pages of its binary, mostly.
func TestIdleReleasesBinaryPages(t *testing.T) {
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"echo": markedServer("echo", mark)}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_echo_echo")
	// A burst: more than the idle releaser's 8 MiB of allocation.
	for i := range 1500 {
		if res := mustCall(t, cs, "mcp_echo_echo", map[string]any{"text": "burst " + strconv.Itoa(i)}); res.IsError {
			t.Fatalf("call %d: %s", i, js(res))
		}
	}
	busy := mustStatusKB(t, s.pid(), "RssFile")
	var idle int
	testutil.Eventually(t, 15*time.Second, "the binary's pages released once idle", func() bool {
		idle = mustStatusKB(t, s.pid(), "RssFile")
		return idle < busy/2
	})
	if res := mustCall(t, cs, "mcp_echo_echo", map[string]any{"text": "after"}); res.IsError || !strings.Contains(textOf(res), "after") {
		t.Fatalf("call after the release: %s", js(res))
	}
	t.Logf("file-backed resident: %d kB after the burst, %d kB idle, %d kB after one more call", busy, idle, mustStatusKB(t, s.pid(), "RssFile"))
}
