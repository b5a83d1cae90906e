package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// The tests in this file pin issue 23: a server whose resources or prompts
// cannot be listed still serves its tools, without restarts.

// stableFor is how long a server with a partial catalog must keep its PID.
const stableFor = 30 * time.Second

// waitPartial waits until server is ready with a partial catalog and
// returns its /status entry.
func (s *sb) waitPartial(t *testing.T, server string, d time.Duration) map[string]any {
	t.Helper()
	var st map[string]any
	testutil.Eventually(t, d, server+" ready with a partial catalog", func() bool {
		st = s.serverStatus(t, server)
		return st != nil && st["state"] == "ready" && st["catalog"] == "partial"
	})
	return st
}

// catalogError is the error /status gives for one failing list of server.
func catalogError(st map[string]any, list string) string {
	errs, _ := st["catalogErrors"].(map[string]any)
	msg, _ := errs[list].(string)
	return msg
}

// keepsPID checks, for stableFor, that server stays ready under the same
// PID with no restart.
func (s *sb) keepsPID(t *testing.T, server string, pid float64) {
	t.Helper()
	deadline := time.Now().Add(stableFor)
	for time.Now().Before(deadline) {
		st := s.serverStatus(t, server)
		if st["pid"] != pid || st["state"] != "ready" || st["restarts"] != float64(0) {
			t.Fatalf("%s changed while its catalog was partial (pid %v before): %s", server, pid, js(st))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestPartialCatalogPostgres runs @modelcontextprotocol/server-postgres
// against a closed port: initialize and tools/list work, resources/list
// fails with "connect ECONNREFUSED". Its query tool is listed within the
// server's timeout, the process is never restarted, /status names the
// failing list, and a call gets the upstream's own error.
func TestPartialCatalogPostgres(t *testing.T) {
	dir := npmDir(t)
	npmBin(t, "mcp-server-postgres")
	port := freePort(t)
	const timeout = 20 * time.Second
	cfg := map[string]any{"mcpServers": map[string]any{
		"pg": map[string]any{
			"command": "npx",
			"args":    []string{"-y", "@modelcontextprotocol/server-postgres", fmt.Sprintf("postgresql://127.0.0.1:%d/db", port)},
			"timeout": timeout.Milliseconds(),
		},
	}}
	started := time.Now()
	s := startSwitchboardIn(t, t.TempDir(), dir, cfg, npmEnv(t))
	cs := s.client(t, nil)
	testutil.Eventually(t, timeout, "mcp_pg_query listed", func() bool { return listTools(t, cs)["mcp_pg_query"] != nil })
	t.Logf("mcp_pg_query listed %s after start", time.Since(started).Round(time.Millisecond))

	st := s.waitPartial(t, "pg", 5*time.Second)
	if msg := catalogError(st, "resources/list"); !strings.Contains(msg, "ECONNREFUSED") {
		t.Errorf("catalogErrors %v, want resources/list with the upstream's ECONNREFUSED", st["catalogErrors"])
	}
	if errs, _ := st["catalogErrors"].(map[string]any); len(errs) != 1 {
		t.Errorf("catalogErrors %v: only resources/list fails (templates/list is -32601, an empty list)", errs)
	}
	pid, _ := st["pid"].(float64)
	if pid == 0 {
		t.Fatalf("no pid in %s", js(st))
	}

	// The server's query tool answers with its own error: pg cannot
	// connect. The upstream's JSON-RPC error reaches the client as a tool
	// result (isError), its text through the trust boundary.
	res, err := callTool(t, cs, "mcp_pg_query", map[string]any{"sql": "SELECT 1"})
	if err != nil || res == nil || !res.IsError || !strings.Contains(textOf(res), "ECONNREFUSED") {
		t.Errorf("query: %v %s, want a tool error with the upstream's ECONNREFUSED", err, js(res))
	}
	if res, err := cs.ListResources(context.Background(), nil); err != nil || len(res.Resources) != 0 {
		t.Errorf("resources/list downstream: %v, %v; want an empty list", res, err)
	}

	s.keepsPID(t, "pg", pid)
	st = s.serverStatus(t, "pg")
	if st["catalog"] != "partial" || st["breaker"] != "closed" {
		t.Errorf("after %s: %s", stableFor, js(st))
	}
	fams := s.scrape(t)
	if n := sample(fams, "switchboard_upstream_list_failures_total", map[string]string{"server": "pg", "list": "resources/list"}); n < 3 {
		t.Errorf("resources/list failures counted %v in %s, want at least 3 (the start, then retries after 5 and 15 s)", n, stableFor)
	}
	if n := sample(fams, "switchboard_upstream_catalog_partial", map[string]string{"server": "pg"}); n != 1 {
		t.Errorf("switchboard_upstream_catalog_partial = %v, want 1", n)
	}
	if !strings.Contains(s.Stderr(), "upstream list failed: method=resources/list error=\"connect ECONNREFUSED 127.0.0.1:"+fmt.Sprint(port)) {
		t.Errorf("no warning naming resources/list and the upstream's message in the log")
	}
}

// TestPartialCatalogFixture is the same with the Go fixture, whose
// prompts/list fails (--fail-list): tools are served, the PID stays, the
// failing list is retried on its backoff (counted in the metrics), and once
// the server heals and says so with list_changed, the catalog is complete
// and the client gets notifications/prompts/list_changed.
func TestPartialCatalogFixture(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{
		"fx": map[string]any{"command": fixture, "args": []string{"--fail-list", "prompts/list"}, "timeout": 10000},
	}}
	s := startSwitchboard(t, cfg)
	changed := make(chan struct{}, 16)
	cs := s.client(t, &mcp.ClientOptions{PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
		changed <- struct{}{}
	}})
	testutil.Eventually(t, 10*time.Second, "mcp_fx_echo listed", func() bool { return listTools(t, cs)["mcp_fx_echo"] != nil })
	st := s.waitPartial(t, "fx", 5*time.Second)
	if msg := catalogError(st, "prompts/list"); msg != "fixture: prompts/list is failing (--fail-list)" {
		t.Errorf("catalogErrors %v, want prompts/list with the fixture's message", st["catalogErrors"])
	}
	if res := mustCall(t, cs, "mcp_fx_echo", map[string]any{"text": "partial"}); res.IsError || unwrap(textOf(res)) != "partial" {
		t.Errorf("echo on a partial catalog: %s", js(res))
	}
	if res, err := cs.ListResources(context.Background(), nil); err != nil || len(res.Resources) != 1 {
		t.Errorf("resources of a server whose prompts fail: %v, %v", res, err)
	}
	pid, _ := st["pid"].(float64)
	s.keepsPID(t, "fx", pid)
	if n := sample(s.scrape(t), "switchboard_upstream_list_failures_total", map[string]string{"server": "fx", "list": "prompts/list"}); n < 3 || n > 4 {
		t.Errorf("prompts/list failures counted %v in %s, want 3 or 4 (the start, then retries after 5, 15 and 35 s)", n, stableFor)
	}
	if n := strings.Count(s.Stderr(), "upstream list failed: method=prompts/list"); n < 3 {
		t.Errorf("%d lines for the failing prompts/list, want one per attempt (the first at WARN, the rest at DEBUG)", n)
	}

	mustCall(t, cs, "mcp_fx_heal_lists", map[string]any{})
	testutil.Eventually(t, 10*time.Second, "a complete catalog", func() bool {
		st := s.serverStatus(t, "fx")
		return st["catalog"] == "complete" && st["catalogErrors"] == nil
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/prompts/list_changed once the catalog was complete")
	}
	prompts, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range prompts.Prompts {
		names[p.Name] = true
	}
	if !names["mcp_fx_greet"] || !names["mcp_fx_healed"] {
		t.Errorf("prompts after the re-list: %v", names)
	}
	if st := s.serverStatus(t, "fx"); st["pid"] != pid || st["restarts"] != float64(0) {
		t.Errorf("restarted: %s", js(st))
	}
	if n := sample(s.scrape(t), "switchboard_upstream_catalog_partial", map[string]string{"server": "fx"}); n != 0 {
		t.Errorf("switchboard_upstream_catalog_partial = %v after the catalog completed", n)
	}
}

// TestSkippedListsFixture: with "resources": false and "listPrompts": false
// the failing lists are never asked for, so the catalog is complete and
// nothing is counted.
func TestSkippedListsFixture(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{
		"fx": map[string]any{
			"command": fixture, "args": []string{"--fail-list", "prompts/list,resources/list,resources/templates/list"},
			"resources": false, "listPrompts": false,
		},
	}}
	s := startSwitchboard(t, cfg)
	cs := s.client(t, nil)
	testutil.Eventually(t, 10*time.Second, "mcp_fx_echo listed", func() bool { return listTools(t, cs)["mcp_fx_echo"] != nil })
	st := s.serverStatus(t, "fx")
	if st["state"] != "ready" || st["catalog"] != "complete" || st["listFailures"] != nil || st["prompts"] != float64(0) || st["resources"] != float64(0) {
		t.Errorf("status %s, want ready and complete, with no prompts, resources or failures", js(st))
	}
	if strings.Contains(s.Stderr(), "upstream list failed") {
		t.Error("a skipped list was asked for")
	}
}
