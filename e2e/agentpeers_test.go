package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Gemini CLI and Codex CLI, the other agent CLIs on npm, run here the way
// Claude Code does in claudecode_test.go: against the fake model on
// loopback (the Gemini API; the OpenAI Responses API), with switchboard as
// their only MCP server over stdio. Only their first request's tools are
// checked; the fake answers them with text.

// TestGeminiCLIFirstRequestTools: Gemini CLI's first conversation request
// offers every switchboard tool, named mcp_<server>_<tool> (so
// mcp_switchboard_mcp_fx_echo). Headless Gemini CLI leaves out the tools of
// an MCP server it does not trust, hence "trust": true.
func TestGeminiCLIFirstRequestTools(t *testing.T) {
	bin := npmBin(t, "gemini")
	cfg := map[string]any{"mcpServers": map[string]any{"fx": fixtureServer("fx")}}
	want := publicTools(t, cfg, "mcp_switchboard_")
	m := startFakeModel(t, nil)
	a := newAgent(t, bin, m,
		"GEMINI_API_KEY=dummy",
		"GOOGLE_GEMINI_BASE_URL="+m.URL,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
	)
	entry := switchboardStdio(writeConfig(t, t.TempDir(), cfg))
	delete(entry, "type")
	entry["trust"] = true
	if err := os.MkdirAll(filepath.Join(a.home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeJSONFile(t, filepath.Join(a.home, ".gemini"), "settings.json", map[string]any{
		"mcpServers": map[string]any{"switchboard": entry},
		"security":   map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":    map[string]any{"usageStatisticsEnabled": false},
		"general":    map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	})
	a.run(t, "-p", "Say done.", "--output-format", "json")
	checkFirstRequest(t, m, "mcp_switchboard_", want)
}

// TestCodexCLIFirstRequestTools: Codex CLI's first request offers every
// switchboard tool, in the namespace tool mcp__switchboard.
func TestCodexCLIFirstRequestTools(t *testing.T) {
	bin := npmBin(t, "codex")
	cfg := map[string]any{"mcpServers": map[string]any{"fx": fixtureServer("fx")}}
	want := publicTools(t, cfg, ccPrefix)
	m := startFakeModel(t, nil)
	codexHome := filepath.Join(t.TempDir(), "codex")
	a := newAgent(t, bin, m, "CODEX_HOME="+codexHome, "FAKE_MODEL_KEY=dummy")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, arg := range switchboardStdio(writeConfig(t, t.TempDir(), cfg))["args"].([]string) {
		args = append(args, strconv.Quote(arg))
	}
	config := fmt.Sprintf(`model = "fake-model"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = %q
env_key = "FAKE_MODEL_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.switchboard]
command = %q
args = [%s]
`, m.URL+"/v1", switchboard, strings.Join(args, ", "))
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	a.run(t, "exec", "--skip-git-repo-check", "Say done.")
	checkFirstRequest(t, m, ccPrefix, want)
}

// checkFirstRequest fails unless the first conversation request offered
// every name of want (the tools with prefix).
func checkFirstRequest(t *testing.T, m *fakeModel, prefix string, want []string) {
	t.Helper()
	turns := m.turns()
	if len(turns) == 0 {
		t.Fatalf("no model request offered tools (%d requests)", len(m.requests()))
	}
	first := withPrefix(turns[0].Tools, prefix)
	if l := lacking(want, first); len(l) > 0 {
		t.Errorf("the first request offers %d of %d switchboard tools; it lacks %s", len(first), len(want), summarize(l))
	}
	t.Logf("the first request offers %d switchboard tools, %d in all", len(first), len(turns[0].Tools))
}
