package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptClients runs the TypeScript SDK's clients against /mcp and
// serve --stdio: v2 (@modelcontextprotocol/client) in its auto and legacy
// modes, and v1 (@modelcontextprotocol/sdk). Each lists tools, calls one,
// gets a call's progress and logs, answers sampling and two rounds of
// elicitation, gives its roots, reads a resource, gets a prompt and hears
// of a subscribed resource's update (testdata/tsclient/client.mjs).
//
// In a view with a per-client server (roots go only to one) every client
// keeps a legacy session, v2 auto too (docs/protocol.md). Without one, v2
// auto speaks 2026-07-28 and the roots step is left out (a shared server
// is given no client's roots, in either era).
func TestTypeScriptClients(t *testing.T) {
	t.Parallel()
	dir := npmDir(t)
	for _, pkg := range []string{"@modelcontextprotocol/client", "@modelcontextprotocol/sdk"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			if full {
				t.Fatalf("%s is not installed: %v", pkg, err)
			}
			t.Skipf("%s is not installed: %v", pkg, err)
		}
	}
	script, err := os.ReadFile(filepath.Join("testdata", "tsclient", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	node := node22(t)
	fx := map[string]any{"command": fixture, "args": []string{"--name", "f"}}
	for _, tc := range []struct {
		name    string
		servers map[string]any
		roots   string
		modern  bool // v2 auto negotiates 2026-07-28
	}{
		{"per-client", map[string]any{"f": fx, "p": map[string]any{"command": fixture, "args": []string{"--name", "p"}, "isolation": "per-client"}}, "mcp_p_roots", false},
		{"shared", map[string]any{"f": fx}, "none", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The TypeScript SDK starts a stdio server with a few variables
			// of the environment only (HOME, PATH, …): the catalog cache is
			// named in the config, so it stays the test's.
			s := startSwitchboard(t, map[string]any{"servers": tc.servers, "catalogCache": t.TempDir()})
			for _, transport := range []string{"http", "stdio"} {
				for _, client := range [][2]string{{"v2", "auto"}, {"v2", "legacy"}, {"v1", "legacy"}} {
					name := transport + "/" + client[0] + "-" + client[1]
					t.Run(name, func(t *testing.T) {
						args := []string{"--input-type=module", "-e", string(script), client[0], client[1]}
						if transport == "http" {
							args = append(args, "http://"+s.addr+"/mcp")
						} else {
							args = append(args, "stdio", switchboard, "serve", "--stdio", "--config", s.config)
						}
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
						defer cancel()
						cmd := exec.CommandContext(ctx, node, args...)
						cmd.Dir = dir // its node_modules hold the SDKs
						cmd.Env = append(os.Environ(), "SB_ROOTS_TOOL="+tc.roots)
						out, err := cmd.Output()
						var got struct {
							Protocol string            `json:"protocol"`
							Steps    map[string]string `json:"steps"`
						}
						lines := strings.Split(strings.TrimSpace(string(out)), "\n")
						if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &got); jerr != nil {
							var stderr string
							if ee, ok := err.(*exec.ExitError); ok {
								stderr = string(ee.Stderr)
							}
							t.Fatalf("no result (%v):\n%s\n%s", err, out, tail(stderr, 3000))
						}
						want := "2025-11-25"
						switch {
						case tc.modern && client[1] == "auto":
							want = "2026-07-28"
						case client[0] == "v1" && transport == "stdio":
							want = "legacy" // v1 does not say which over stdio
						}
						if got.Protocol != want {
							t.Errorf("protocol %q, want %q", got.Protocol, want)
						}
						steps := 9
						if tc.roots == "none" {
							steps = 8
						}
						if len(got.Steps) != steps {
							t.Errorf("%d steps ran, want %d: %v", len(got.Steps), steps, got.Steps)
						}
						for step, outcome := range got.Steps {
							if outcome != "ok" {
								t.Errorf("%s: %s", step, outcome)
							}
						}
						t.Logf("%s %s: %s, %d steps ok", client[0], client[1], got.Protocol, len(got.Steps))
					})
				}
			}
		})
	}
}
