package view

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestSnapshotGolden plans each testdata/config/*.txtar: a valid config in,
// the servers of every view and the upstream spec of every handle out. The
// config package's own golden files cover parsing and validation errors.
func TestSnapshotGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/config/*.txtar")
	if len(files) < 3 {
		t.Fatalf("want at least 3 golden configs, have %d", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sec := testutil.Sections(a)
			src, ok := sec["config.json"]
			if !ok {
				src = sec["config.yaml"]
			}
			c, err := config.Parse([]byte(src))
			if err == nil {
				err = c.Validate()
			}
			if err != nil {
				t.Fatalf("config rejected: %v", err)
			}
			got := renderPlan(t, c)
			if *update {
				testutil.SetSection(a, "snapshot", got)
				if err := os.WriteFile(f, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := sec["snapshot"]; want != got {
				t.Errorf("snapshot differs (run with -update to accept):\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

func renderPlan(t *testing.T, c *config.Config) string {
	views, specs := Plan(c)
	out := map[string]any{"views": map[string][]string{}, "specs": specs}
	ids := make([]string, 0, len(views))
	for id := range views {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		var names []string
		for _, s := range views[id] {
			names = append(names, s.key+" -> "+s.handleKey)
		}
		out["views"].(map[string][]string)[id] = names
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestServerDefaults(t *testing.T) {
	c, err := config.Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"b":{"url":"http://127.0.0.1:1/mcp"},"c":{"type":"http","url":"http://127.0.0.1:1/mcp"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, specs := Plan(c)
	a, b, hc := specs["a"], specs["b"], specs["c"]
	if a.Transport != "stdio" || b.Transport != "auto" || hc.Transport != "http" {
		t.Errorf("transports: a=%s b=%s c=%s, want stdio, auto (url only) and http", a.Transport, b.Transport, hc.Transport)
	}
	if a.ConnectTimeout.Milliseconds() != config.DefaultTimeoutMS || a.CallTimeout.Milliseconds() != config.DefaultToolTimeoutMS ||
		!a.RestartOnCrash || a.MaxRestarts != config.DefaultMaxRestarts || a.BreakerFailures != config.DefaultBreakerFailures ||
		a.BreakerOpen.Milliseconds() != config.DefaultBreakerOpenMS {
		t.Errorf("defaults not applied: %+v", a)
	}
}
