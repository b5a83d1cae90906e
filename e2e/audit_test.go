package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestAuditFullDiskRefusesCalls: with audit.file /dev/full (every write
// fails with ENOSPC) and audit.onError refuse, the first call runs and its
// lost record is logged and shown in /status, /readyz fails, and the next
// call is refused with a message that names the audit trail.
func TestAuditFullDiskRefusesCalls(t *testing.T) {
	s := startSwitchboard(t, map[string]any{
		"mcpServers": map[string]any{"a": fixtureServer("a")},
		"audit":      map[string]any{"file": "/dev/full", "onError": "refuse"},
	})
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "a listed", func() bool { return listTools(t, cs)["mcp_a_echo"] != nil })
	if code := s.readyz(t); code != http.StatusOK {
		t.Fatalf("/readyz before any call: %d", code)
	}

	if res := mustCall(t, cs, "mcp_a_echo", map[string]any{"text": "first"}); res.IsError {
		t.Fatalf("first call: %s", textOf(res))
	}
	testutil.Eventually(t, 5*time.Second, "the lost record logged", func() bool {
		return strings.Contains(s.Stderr(), "audit write failed") && strings.Contains(s.Stderr(), "no space left on device")
	})
	audit, _ := s.status(t)["audit"].(map[string]any)
	if audit["failing"] != true || audit["writeFailures"] != float64(1) || !strings.Contains(fmt.Sprint(audit["lastError"]), "no space left on device") {
		t.Errorf("/status audit: %s", js(audit))
	}
	if code := s.readyz(t); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while audit records cannot be written: %d, want 503", code)
	}
	res := mustCall(t, cs, "mcp_a_echo", map[string]any{"text": "second"})
	if !res.IsError || !strings.Contains(textOf(res), "audit trail cannot be written") {
		t.Errorf("second call: isError %v %q; want a refusal naming the audit trail", res.IsError, textOf(res))
	}
}
