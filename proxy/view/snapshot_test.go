package view

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

var update = flag.Bool("update", false, "rewrite golden files")

// txtar is a minimal reader of the txtar format: a header, then sections
// introduced by "-- name --" lines.
type txtar struct {
	header   string
	sections map[string]string
	order    []string
}

func readTxtar(t *testing.T, path string) *txtar {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := &txtar{sections: map[string]string{}}
	cur := ""
	var buf strings.Builder
	flush := func() {
		if cur == "" {
			a.header = buf.String()
		} else {
			a.sections[cur] = buf.String()
			a.order = append(a.order, cur)
		}
		buf.Reset()
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		trim := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trim, "-- ") && strings.HasSuffix(trim, " --") && len(trim) > 6 {
			flush()
			cur = trim[3 : len(trim)-3]
			continue
		}
		buf.WriteString(line)
	}
	flush()
	return a
}

// set replaces section name, or adds it at the end.
func (a *txtar) set(name, content string) {
	if _, ok := a.sections[name]; !ok {
		a.order = append(a.order, name)
	}
	a.sections[name] = content
}

func (a *txtar) format() string {
	var b strings.Builder
	b.WriteString(a.header)
	for _, name := range a.order {
		b.WriteString("-- " + name + " --\n")
		b.WriteString(a.sections[name])
	}
	return b.String()
}

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
			a := readTxtar(t, f)
			src, ok := a.sections["config.json"]
			if !ok {
				src = a.sections["config.yaml"]
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
				a.set("snapshot", got)
				if err := os.WriteFile(f, []byte(a.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := a.sections["snapshot"]; want != got {
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
