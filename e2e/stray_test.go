package e2e

import (
	"strings"
	"testing"
)

// TestStrayAnswersNamedOnce: a server that answers with IDs switchboard
// never sent (string IDs echoed wrongly, a number out of range) gets its
// calls answered all the same, and the fault is named by one WARN line for
// that server, not one per answer; /status counts every stray answer
// (issue 39, item 6).
func TestStrayAnswersNamedOnce(t *testing.T) {
	t.Parallel()
	stray := []any{
		map[string]any{"jsonrpc": "2.0", "id": "1", "result": map[string]any{}},
		map[string]any{"jsonrpc": "2.0", "id": "sb-wrong", "result": map[string]any{}},
		map[string]any{"jsonrpc": "2.0", "id": 987654, "error": map[string]any{"code": -32000, "message": "nobody asked"}},
	}
	script := map[string]any{"answers": []map[string]any{
		{"method": "tools/list", "result": map[string]any{"tools": []any{map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}}}},
		{"method": "tools/call", "before": stray, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "answered"}}}},
	}}
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"liar": hostileServer(t, script), "p": fixtureServer("p")}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_liar_echo")
	const calls = 4
	for range calls {
		if got := textOf(mustCall(t, cs, "mcp_liar_echo", map[string]any{})); !strings.Contains(got, "answered") {
			t.Fatalf("call answered %q, want the server's answer", got)
		}
	}
	if got, want := s.serverStatus(t, "liar")["strayAnswers"], float64(calls*len(stray)); got != want {
		t.Errorf("/status strayAnswers of liar = %v, want %v", got, want)
	}
	if got := s.serverStatus(t, "p")["strayAnswers"]; got != nil {
		t.Errorf("/status strayAnswers of p = %v, want none", got)
	}
	var warns []string
	for _, line := range strings.Split(s.Stderr(), "\n") {
		if strings.Contains(line, "[WARN]") && strings.Contains(line, "not in flight") {
			warns = append(warns, line)
		}
	}
	if len(warns) != 1 {
		t.Fatalf("%d WARN lines about answers to no call in flight, want 1:\n%s", len(warns), strings.Join(warns, "\n"))
	}
	if !strings.Contains(warns[0], "upstream.liar") || !strings.Contains(warns[0], "count=") {
		t.Errorf("the WARN line names neither the server nor the count: %s", warns[0])
	}
}
