package config_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestConfigGolden parses and validates each testdata/*.txtar. A file with
// an "error" section expects every listed line to appear in the error (one
// per problem, with its path); one with a "canonical" section expects the
// config to be valid and to marshal to that JSON, the form Digest hashes.
// The snapshots a valid config becomes are proxy's golden files.
func TestConfigGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) < 20 {
		t.Fatalf("want at least 20 golden configs, have %d", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			a := testutil.Sections(ar)
			src, ok := a["config.json"]
			if !ok {
				src = a["config.yaml"]
			}
			c, err := config.Parse([]byte(src))
			if err == nil {
				err = c.Validate()
			}
			if want, ok := a["error"]; ok {
				if err == nil {
					t.Fatal("config accepted, want an error")
				}
				for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
					if !strings.Contains(err.Error(), line) {
						t.Errorf("error lacks %q; got:\n%v", line, err)
					}
				}
				var fe *config.FieldError
				if !errors.As(err, &fe) && !strings.Contains(err.Error(), "line ") {
					t.Errorf("error carries no field path: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("config rejected: %v", err)
			}
			b, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := string(b) + "\n"
			if *update {
				testutil.SetSection(ar, "canonical", got)
				if err := os.WriteFile(f, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := a["canonical"]; want != got {
				t.Errorf("canonical form differs (run with -update to accept):\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

func TestParseYAMLAndJSONAgree(t *testing.T) {
	j, err := config.Parse([]byte(`{"mcpServers":{"a":{"command":"x","args":["1"]}},"tools":{"deny":["mcp_a_*"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	y, err := config.Parse([]byte("mcpServers:\n  a:\n    command: x\n    args: ['1']\ntools:\n  deny: [mcp_a_*]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Digest() != y.Digest() {
		t.Errorf("digests differ: json %s yaml %s", j.Digest(), y.Digest())
	}
}

func TestDigestIgnoresFormatting(t *testing.T) {
	a, _ := config.Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"b":{"command":"y"}}}`))
	b, _ := config.Parse([]byte("{\n  \"mcpServers\": {\n    \"b\": {\"command\": \"y\"},\n    \"a\": {\"command\": \"x\"}\n  }\n}\n"))
	if a.Digest() != b.Digest() {
		t.Error("reformatting changed the digest")
	}
	c, _ := config.Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"b":{"command":"z"}}}`))
	if a.Digest() == c.Digest() {
		t.Error("a real change kept the digest")
	}
}

func TestEnvOverrides(t *testing.T) {
	c, err := config.Parse([]byte(`{"listen":"127.0.0.1:1","logLevel":"info"}`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SWITCHBOARD_LISTEN": "127.0.0.1:2", "SWITCHBOARD_LOG_LEVEL": "debug", "SWITCHBOARD_LOG_FORMAT": "json"}
	c.ApplyEnv(func(k string) string { return env[k] })
	if c.Listen != "127.0.0.1:2" || c.LogLevel != "debug" || c.LogFormat != "json" {
		t.Errorf("env did not override: %+v", c)
	}
}

func TestDurationDefaults(t *testing.T) {
	c, err := config.Parse([]byte(`{"mcpServers":{"a":{"command":"x"},"b":{"command":"y","timeout":5,"toolTimeout":6,
		"breaker":{"openMs":7}}},"shutdownTimeout":10}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	a, b := c.MCPServers["a"], c.MCPServers["b"]
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"default timeout", a.ConnectTimeout(), config.DefaultTimeoutMS * time.Millisecond},
		{"default toolTimeout", a.ToolTimeout(), config.DefaultToolTimeoutMS * time.Millisecond},
		{"default breaker.openMs", a.Breaker.OpenPeriod(), config.DefaultBreakerOpenMS * time.Millisecond},
		{"default shutdownTimeout", (&config.Config{}).ShutdownTimeout(), config.DefaultShutdownMS * time.Millisecond},
		{"default drainTimeout", c.DrainTimeout(), config.DefaultDrainMS * time.Millisecond},
		{"timeout", b.ConnectTimeout(), 5 * time.Millisecond},
		{"toolTimeout", b.ToolTimeout(), 6 * time.Millisecond},
		{"breaker.openMs", b.Breaker.OpenPeriod(), 7 * time.Millisecond},
		{"shutdownTimeout", c.ShutdownTimeout(), 10 * time.Millisecond},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}
