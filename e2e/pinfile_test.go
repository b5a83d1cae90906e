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

// TestPinFileCorruptOrEmptyAtStart: validate reads the pin file serve
// reads. A corrupt one fails both, naming the file and the fix; an empty
// one (a write a crash cut short) is a warning for validate, and serve
// starts, says so and writes the pins again. See issue 39.
func TestPinFileCorruptOrEmptyAtStart(t *testing.T) {
	dir := t.TempDir()
	pins := filepath.Join(dir, "pins.json")
	path := filepath.Join(dir, "config.json")
	writeConfigAt(t, path, map[string]any{
		"sanitize":   map[string]any{"pinTools": "block", "pinFile": pins},
		"mcpServers": map[string]any{"a": fixtureServer("a")},
	})
	env := append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())

	must(t, os.WriteFile(pins, []byte(`{"version":1,"pins":{"a":{"echo":"2:ab`), 0o600))
	for _, args := range [][]string{
		{"validate", "--config", path},
		{"serve", "--config", path, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"},
	} {
		code, _, stderr := runCLI(t, env, args...)
		if code != 2 || !strings.Contains(stderr, pins) || !strings.Contains(stderr, "move it aside") {
			t.Errorf("%s with a corrupt pin file: exit %d, want 2 naming the file and the fix; stderr:\n%s", args[0], code, stderr)
		}
	}

	must(t, os.WriteFile(pins, nil, 0o600))
	code, _, stderr := runCLI(t, env, "validate", "--config", path)
	if code != 0 || !strings.Contains(stderr, "warning: pin file "+pins+" is empty") {
		t.Errorf("validate with an empty pin file: exit %d, want 0 with a warning; stderr:\n%s", code, stderr)
	}
	s := serveConfig(t, path)
	testutil.Eventually(t, 20*time.Second, "pins written again", func() bool {
		var pf struct {
			Pins map[string]map[string]string `json:"pins"`
		}
		b, _ := os.ReadFile(pins)
		return json.Unmarshal(b, &pf) == nil && pf.Pins["a"]["echo"] != ""
	})
	if !strings.Contains(s.Stderr(), "pin file empty, every tool is pinned afresh") {
		t.Errorf("no warning for the empty pin file:\n%s", s.Stderr())
	}
}
