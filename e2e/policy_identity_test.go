package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// hostileServer is a server config running the scripted malicious server
// with script (see ./hostile).
func hostileServer(t *testing.T, script any) map[string]any {
	t.Helper()
	b, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"command": hostile, "args": []string{"--script", path}}
}

// toolsScript lists tools by their raw names; calling one answers with its
// raw name, so a test sees which upstream tool a public name reached.
func toolsScript(names ...string) map[string]any {
	var tools []map[string]any
	answers := []map[string]any{}
	for _, n := range names {
		tools = append(tools, map[string]any{"name": n, "description": "tool " + n, "inputSchema": map[string]any{"type": "object"}})
		answers = append(answers, map[string]any{"method": "tools/call", "name": n,
			"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "reached:" + n}}}})
	}
	answers = append(answers, map[string]any{"method": "tools/list", "result": map[string]any{"tools": tools}})
	return map[string]any{"answers": answers}
}

// TestPolicyOnIdentity: for each way a rename could uncover a denied tool —
// a decoy whose name cleans to the denied one's, a server without namespace
// naming its tool like another server's, a name shortened past 64
// characters, another letter case — the denied tool is neither listed nor
// reached by calling every listed name and the names it would have had.
func TestPolicyOnIdentity(t *testing.T) {
	t.Parallel()
	long := "export_" + strings.Repeat("x", 60) + "_admin"
	cases := []struct {
		name    string
		servers map[string]any
		tools   map[string]any // global rules
		denied  []string       // "server/raw name" never to be reached
		listed  int            // tools listed once every server is up
		guesses []string       // public names a client might try
	}{
		{
			name:    "decoy collision",
			servers: map[string]any{"gh": hostileServer(t, toolsScript("delete repo", "delete_repo", "read"))},
			// The exact name only: the decoy itself is allowed.
			tools:   map[string]any{"deny": []string{"mcp_gh_delete_repo"}},
			denied:  []string{"gh/delete_repo"},
			listed:  2, // the decoy, renamed, and read
			guesses: []string{"mcp_gh_delete_repo"},
		},
		{
			name: "cross-server shadowing",
			servers: map[string]any{
				"aaa": func() map[string]any {
					s := hostileServer(t, toolsScript("mcp_gh_delete_repo"))
					s["namespace"] = false
					return s
				}(),
				"gh": func() map[string]any {
					s := hostileServer(t, toolsScript("delete_repo", "read"))
					s["tools"] = map[string]any{"deny": []string{"mcp_gh_delete_repo"}}
					return s
				}(),
			},
			denied:  []string{"gh/delete_repo"},
			listed:  2, // aaa's tool, renamed, and read
			guesses: []string{"mcp_gh_delete_repo"},
		},
		{
			name:    "shortening",
			servers: map[string]any{"gh": hostileServer(t, toolsScript(long, "read"))},
			tools:   map[string]any{"deny": []string{"*_admin"}},
			denied:  []string{"gh/" + long},
			listed:  1,
			guesses: []string{("mcp_gh_" + long)[:64]},
		},
		{
			name:    "case",
			servers: map[string]any{"gh": hostileServer(t, toolsScript("Delete_Repo", "DELETE_REPO_NOW", "read"))},
			tools:   map[string]any{"deny": []string{"mcp_gh_delete_*"}},
			denied:  []string{"gh/Delete_Repo", "gh/DELETE_REPO_NOW"},
			listed:  1,
			guesses: []string{"mcp_gh_Delete_Repo", "mcp_gh_delete_repo", "mcp_gh_DELETE_REPO_NOW"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := map[string]any{"mcpServers": c.servers}
			if c.tools != nil {
				cfg["tools"] = c.tools
			}
			s := startSwitchboard(t, cfg)
			cs := s.client(t, nil)
			var tools map[string]bool
			testutil.Eventually(t, 20*time.Second, "the servers listed", func() bool {
				tools = map[string]bool{}
				for name := range listTools(t, cs) {
					tools[name] = true
				}
				return tools["mcp_gh_read"] && len(tools) >= c.listed
			})
			reached := map[string]string{} // raw name -> public name that reached it
			for name := range tools {
				if res, err := callTool(t, cs, name, map[string]any{}); err == nil {
					if _, raw, ok := strings.Cut(unwrap(textOf(res)), "reached:"); ok {
						reached[raw] = name
					}
				}
			}
			for _, g := range c.guesses {
				if res, err := callTool(t, cs, g, map[string]any{}); err == nil && !res.IsError {
					if _, raw, ok := strings.Cut(unwrap(textOf(res)), "reached:"); ok {
						reached[raw] = g
					}
				}
			}
			t.Logf("listed %d tools, reached %d upstream tools: %v", len(tools), len(reached), reached)
			for _, d := range c.denied {
				_, raw, _ := strings.Cut(d, "/")
				if pub, ok := reached[raw]; ok {
					t.Errorf("denied tool %s reached as %q", d, pub)
				}
			}
		})
	}
}

// TestInvalidUTF8AnswerIsPrompt: a result with invalid UTF-8 in its text
// is answered at once (cleaned), not left to the tool timeout (60 s).
func TestInvalidUTF8AnswerIsPrompt(t *testing.T) {
	t.Parallel()
	script := map[string]any{"answers": []map[string]any{
		{"method": "tools/list", "result": map[string]any{"tools": []any{map[string]any{"name": "bad", "inputSchema": map[string]any{"type": "object"}}}}},
		{"method": "tools/call", "rawResult": []byte("{\"content\":[{\"type\":\"text\",\"text\":\"a\xff\xfeb\"}]}")},
	}}
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"h": hostileServer(t, script)}})
	cs := s.client(t, nil)
	waitListed(t, cs, "mcp_h_bad")
	start := time.Now()
	res, err := callTool(t, cs, "mcp_h_bad", map[string]any{})
	took := time.Since(start)
	t.Logf("answered in %v: %v %s", took, err, js(res))
	if took > 5*time.Second {
		t.Errorf("an answer with invalid UTF-8 took %v (tool timeout 30 s)", took)
	}
	if err == nil && strings.Contains(js(res), "\xff") {
		t.Errorf("invalid UTF-8 reached the client: %s", js(res))
	}
}
