package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

var conformanceSummaryRE = regexp.MustCompile(`(?m)^Total: (\d+) passed, (\d+) failed`)

// runConformance runs the official conformance suite (all server scenarios)
// against url and fails on any failed scenario.
func runConformance(t *testing.T, url string) {
	t.Helper()
	node := node22(t)
	suite := filepath.Join(npmDir(t), "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--suite", "all")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	text := string(out)
	m := conformanceSummaryRE.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no summary from the conformance suite (%v):\n%s", err, tail(text, 4000))
	}
	var failed []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "✗ ") {
			failed = append(failed, strings.TrimPrefix(line, "✗ "))
		}
	}
	t.Logf("conformance through switchboard: %s passed, %s failed", m[1], m[2])
	if m[2] != "0" || err != nil || len(failed) > 0 {
		t.Errorf("conformance failures (exit %v):\n%s\n\n%s", err, strings.Join(failed, "\n"), tail(text, 6000))
	}
	if m[1] == "0" {
		t.Error("the suite passed nothing")
	}
}

// TestConformanceThroughSwitchboard runs the official conformance suite
// against switchboard fronting our conformance fixture, once over a stdio
// upstream and once over a streamable HTTP upstream. The fixture's tools and
// prompts keep their names (namespace: false) because the suite calls them
// by name; wrapping, policy and every other layer stay on.
func TestConformanceThroughSwitchboard(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
			"conformance": map[string]any{"command": conffix, "namespace": false},
		}})
		waitTools(t, s, "test_simple_text")
		runConformance(t, "http://"+s.addr+"/mcp")
	})
	t.Run("http", func(t *testing.T) {
		dir := t.TempDir()
		ready := filepath.Join(dir, "url")
		p := start(t, dir, nil, conffix, "--transport", "http", "--listen", "127.0.0.1:0", "--ready-file", ready)
		url := strings.TrimSpace(waitFile(t, ready, 20*time.Second, p))
		s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
			"conformance": map[string]any{"type": "http", "url": url, "namespace": false},
		}})
		waitTools(t, s, "test_simple_text")
		runConformance(t, "http://"+s.addr+"/mcp")
	})
}

func waitTools(t *testing.T, s *sb, name string) {
	t.Helper()
	cs := s.client(t, nil)
	testutil.Eventually(t, 30*time.Second, name+" listed", func() bool { return listTools(t, cs)[name] != nil })
	_ = cs.Close()
}
