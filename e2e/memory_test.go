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
	// A burst: more than the idle releaser's 8 MiB of allocation.
	releasedAfterCalls(t, 1500)
}

// TestQuietReleasesBinaryPagesAfterLittleWork: a few calls allocate far
// less than the idle releaser's 8 MiB, but run code from much of the
// binary; once switchboard is quiet again, it drops those pages too.
func TestQuietReleasesBinaryPagesAfterLittleWork(t *testing.T) {
	releasedAfterCalls(t, 20)
}

// releasedAfterCalls makes n calls through a switchboard with one echo
// server, then waits for its file-backed resident memory to fall under
// half of what it was after them, and makes one call more. Start-up's own
// release runs once the server's first start attempt ends, about when its
// tools are first listed, and takes milliseconds: what the calls run is
// mapped after it.
func releasedAfterCalls(t *testing.T, n int) {
	t.Helper()
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"echo": markedServer("echo", mark)}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_echo_echo")
	for i := range n {
		if res := mustCall(t, cs, "mcp_echo_echo", map[string]any{"text": "call " + strconv.Itoa(i)}); res.IsError {
			t.Fatalf("call %d: %s", i, js(res))
		}
	}
	busy := mustStatusKB(t, s.pid(), "RssFile")
	var idle int
	testutil.Eventually(t, 15*time.Second, "the binary's pages released once quiet", func() bool {
		idle = mustStatusKB(t, s.pid(), "RssFile")
		return idle < busy/2
	})
	if res := mustCall(t, cs, "mcp_echo_echo", map[string]any{"text": "after"}); res.IsError || !strings.Contains(textOf(res), "after") {
		t.Fatalf("call after the release: %s", js(res))
	}
	t.Logf("file-backed resident: %d kB after %d calls, %d kB quiet, %d kB after one more call", busy, n, idle, mustStatusKB(t, s.pid(), "RssFile"))
}
