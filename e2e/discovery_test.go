package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestDiscoverySearchMode: with discovery in search mode a real client
// lists switchboard's two tools and the always-visible one; finds a tool
// by a request in English and by one in Chinese, calls it through
// switchboard_call_tool, gets list_changed and then sees and calls it
// natively; a tool the policy denies is never found nor callable through
// call_tool; the audit log and the metrics name the real tool.
func TestDiscoverySearchMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.log")
	s := startSwitchboardIn(t, dir, dir, map[string]any{
		"mcpServers": map[string]any{"fx": fixtureServer("fx")},
		"tools":      map[string]any{"deny": []string{"mcp_fx_crash"}},
		"discovery":  map[string]any{"mode": "search", "alwaysVisible": []string{"mcp_fx_echo"}, "maxDescriptionChars": 40},
		"audit":      map[string]any{"enabled": true, "file": audit},
	}, nil)
	cs, changed := listChangedClient(t, s, "/mcp")
	waitListed(t, cs, "mcp_fx_echo")
	listed := keys(listTools(t, cs))
	slices.Sort(listed)
	if want := []string{"mcp_fx_echo", "switchboard_call_tool", "switchboard_find_tools"}; !slices.Equal(listed, want) {
		t.Fatalf("search mode lists %v, want %v", listed, want)
	}

	// The same request in English, and in Chinese against a tool
	// described in English (the ranker's translations).
	for _, q := range []string{"add two numbers together", "把两个数字加起来"} {
		found := findTools(t, cs, q)
		t.Logf("find_tools(%s) = %v", q, found)
		if len(found) == 0 || found[0] != "mcp_fx_add" {
			t.Errorf("find_tools(%s): %v, want mcp_fx_add first", q, found)
		}
	}
	// Hidden by policy: never found, never callable through call_tool.
	for _, q := range []string{"crash", "crash the server process", "exit with a code"} {
		if got := findTools(t, cs, q); slices.Contains(got, "mcp_fx_crash") {
			t.Errorf("find_tools(%q) returned the denied tool: %v", q, got)
		}
	}
	if _, err := callTool(t, cs, "switchboard_call_tool", map[string]any{"name": "mcp_fx_crash", "arguments": map[string]any{"code": 1}}); err == nil || !strings.Contains(err.Error(), `unknown tool "mcp_fx_crash"`) {
		t.Errorf("call_tool of a denied tool: %v, want unknown tool", err)
	}

	res := mustCall(t, cs, "switchboard_call_tool", map[string]any{"name": "mcp_fx_add", "arguments": map[string]any{"a": 2, "b": 3}})
	if res.IsError || !strings.Contains(textOf(res), "5") {
		t.Errorf("add through call_tool: %s", js(res))
	}
	testutil.Eventually(t, 10*time.Second, "list_changed after find_tools", func() bool { return changed.Load() > 0 })
	tools := listTools(t, cs)
	if tools["mcp_fx_add"] == nil {
		t.Fatalf("the found tool is not in the session's list: %v", keys(tools))
	}
	if d := tools["mcp_fx_echo"].Description; len([]rune(d)) > 41 {
		t.Errorf("listed description not capped at 40 characters: %q", d)
	}
	if res := mustCall(t, cs, "mcp_fx_add", map[string]any{"a": 4, "b": 5}); res.IsError || !strings.Contains(textOf(res), "9") {
		t.Errorf("add called natively: %s", js(res))
	}

	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	adds := strings.Count(string(b), `"tool":"mcp_fx_add"`)
	if adds != 2 || strings.Contains(string(b), `"tool":"switchboard_call_tool"`) {
		t.Errorf("audit log: %d lines for mcp_fx_add (want 2), call_tool audited as itself: %s", adds, b)
	}
	resp, err := http.Get("http://" + s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `tool="mcp_fx_add"`) {
		t.Error("metrics do not name mcp_fx_add")
	}
}

// findTools calls switchboard_find_tools and returns the names found, best
// first.
func findTools(t *testing.T, cs *mcp.ClientSession, query string) []string {
	t.Helper()
	res := mustCall(t, cs, "switchboard_find_tools", map[string]any{"query": query})
	if res.IsError {
		t.Fatalf("find_tools(%q): %s", query, js(res))
	}
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("find_tools(%q): %v in %s", query, err, b)
	}
	var names []string
	for _, x := range out.Tools {
		names = append(names, x.Name)
	}
	return names
}
