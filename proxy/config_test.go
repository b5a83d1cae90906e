package proxy

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
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

func (a *txtar) format() string {
	var b strings.Builder
	b.WriteString(a.header)
	for _, name := range a.order {
		b.WriteString("-- " + name + " --\n")
		b.WriteString(a.sections[name])
	}
	return b.String()
}

// TestConfigGolden parses and validates each testdata/config/*.txtar. A
// file with an "error" section expects every listed line to appear in the
// error (one per problem, with its path); one with a "snapshot" section
// expects the planned servers of every view.
func TestConfigGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/config/*.txtar")
	if len(files) < 20 {
		t.Fatalf("want at least 20 golden configs, have %d", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			a := readTxtar(t, f)
			src, ok := a.sections["config.json"]
			if !ok {
				src = a.sections["config.yaml"]
			}
			c, err := Parse([]byte(src))
			if err == nil {
				err = c.Validate()
			}
			if want, ok := a.sections["error"]; ok {
				if err == nil {
					t.Fatal("config accepted, want an error")
				}
				for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
					if !strings.Contains(err.Error(), line) {
						t.Errorf("error lacks %q; got:\n%v", line, err)
					}
				}
				var fe *FieldError
				if !errors.As(err, &fe) && !strings.Contains(err.Error(), "line ") {
					t.Errorf("error carries no field path: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("config rejected: %v", err)
			}
			got := renderPlan(t, c)
			if *update {
				a.sections["snapshot"] = got
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

func renderPlan(t *testing.T, c *Config) string {
	views, specs := planViews(c)
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

func TestParseYAMLAndJSONAgree(t *testing.T) {
	j, err := Parse([]byte(`{"mcpServers":{"a":{"command":"x","args":["1"]}},"tools":{"deny":["mcp_a_*"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	y, err := Parse([]byte("mcpServers:\n  a:\n    command: x\n    args: ['1']\ntools:\n  deny: [mcp_a_*]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Digest() != y.Digest() {
		t.Errorf("digests differ: json %s yaml %s", j.Digest(), y.Digest())
	}
}

func TestDigestIgnoresFormatting(t *testing.T) {
	a, _ := Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"b":{"command":"y"}}}`))
	b, _ := Parse([]byte("{\n  \"mcpServers\": {\n    \"b\": {\"command\": \"y\"},\n    \"a\": {\"command\": \"x\"}\n  }\n}\n"))
	if a.Digest() != b.Digest() {
		t.Error("reformatting changed the digest")
	}
	c, _ := Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"b":{"command":"z"}}}`))
	if a.Digest() == c.Digest() {
		t.Error("a real change kept the digest")
	}
}

func TestEnvOverrides(t *testing.T) {
	c, err := Parse([]byte(`{"listen":"127.0.0.1:1","logLevel":"info"}`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SWITCHBOARD_LISTEN": "127.0.0.1:2", "SWITCHBOARD_LOG_LEVEL": "debug", "SWITCHBOARD_LOG_FORMAT": "json"}
	c.applyEnv(func(k string) string { return env[k] })
	if c.Listen != "127.0.0.1:2" || c.LogLevel != "debug" || c.LogFormat != "json" {
		t.Errorf("env did not override: %+v", c)
	}
}

func TestServerDefaults(t *testing.T) {
	c, err := Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"b":{"url":"http://127.0.0.1:1/mcp"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, specs := planViews(c)
	a, b := specs["a"], specs["b"]
	if a.Transport != "stdio" || b.Transport != "http" {
		t.Errorf("transports: a=%s b=%s", a.Transport, b.Transport)
	}
	if a.ConnectTimeout.Milliseconds() != DefaultTimeoutMS || a.CallTimeout.Milliseconds() != DefaultToolTimeoutMS ||
		!a.RestartOnCrash || a.MaxRestarts != DefaultMaxRestarts || a.BreakerFailures != DefaultBreakerFailures {
		t.Errorf("defaults not applied: %+v", a)
	}
}
