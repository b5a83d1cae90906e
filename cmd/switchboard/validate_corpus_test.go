package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestValidateClientCorpus runs `switchboard validate` on every real
// client file of proxy/config/testdata/clients, unmodified: each is ok
// with its server count and the notes and warnings it should print, or
// fails with its documented message. See #18.
func TestValidateClientCorpus(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, k := range []string{"API_BASE_URL", "CACHE_DIR", "AIRTABLE_API_KEY", "PERPLEXITY_API_KEY", "REMOTE_TOKEN", "DATABASE_URL",
		"EXTERNAL_API_KEY", "DB_CONNECTION_STRING", "FIGMA_OAUTH_TOKEN", "EXAMPLE_FEATURES", "API_KEY2", "GITHUB_PERSONAL_ACCESS_TOKEN", "SUPABASE_TOKEN"} {
		t.Setenv(k, "")
	}
	t.Setenv("API_KEY", "k-123")
	t.Setenv("MY_SERVICE_TOKEN", "t-456")
	t.Setenv("GITHUB_TOKEN", "ghp-789")
	t.Setenv("FIGMA_KEY", "f-000")
	const dir = "../../proxy/config/testdata/clients/"
	for _, tc := range []struct {
		file     string
		servers  int
		stderr   []string // substrings of what validate prints besides the ok line
		wantCode int
	}{
		{file: "claude-desktop/claude_desktop_config.json", servers: 2, stderr: []string{"note: ignored keys of Claude Desktop: globalShortcut, preferences"}},
		{file: "claude-code/.mcp.json", servers: 3},
		{file: "claude-code-user/.claude.json", servers: 1, stderr: []string{
			"note: ignored keys of Claude Code: autoUpdates, editorMode",
			"warning: mcpServers.airtable.env.AIRTABLE_API_KEY: ${AIRTABLE_API_KEY} is not set; it expands to an empty string",
		}},
		{file: "cursor-project/.cursor/mcp.json", servers: 3},
		{file: "cursor-global/mcp.json", servers: 2},
		{file: "vscode/.vscode/mcp.json", servers: 3, stderr: []string{"note: ignored keys of VS Code: inputs", "warning: servers.memory.env.PERPLEXITY_API_KEY"}},
		{file: "vscode-input/.vscode/mcp.json", wantCode: exitConfig, stderr: []string{
			"switchboard: invalid config:",
			"servers.Perplexity.env.PERPLEXITY_API_KEY: ${input:perplexity-key} is VS Code's prompt-for-input syntax",
		}},
		{file: "vscode-both/.vscode/mcp.json", wantCode: exitConfig, stderr: []string{"servers: VS Code's name for mcpServers; the file has both, keep one"}},
		{file: "cline/cline_mcp_settings.json", servers: 4, stderr: []string{
			"note: ignored keys of Cline: mcpServers.brave-search.alwaysAllow",
			"note: mcpServers.weather.timeout: 60 read as seconds",
		}},
		{file: "roo-code/mcp_settings.json", servers: 2, stderr: []string{"mcpServers.local-server.watchPaths", "note: mcpServers.local-server.timeout: 120 read as seconds"}},
		{file: "windsurf/mcp_config.json", servers: 2},
		{file: "sse-url-only/mcp.json", servers: 1},
		{file: "self-start/claude_desktop_config.json", wantCode: exitConfig, stderr: []string{"mcpServers.switchboard.command: runs switchboard itself (switchboard serve)"}},
		{file: "unset-var/.mcp.json", servers: 1, stderr: []string{"warning: mcpServers.db.args[3]: ${DATABASE_URL} is not set"}},
		{file: "zed/settings.json", servers: 2, stderr: []string{"note: ignored keys of Zed: agent, buffer_font_size, context_servers.mcp-server-context7", "note: context_servers.mcp-server-context7: a server a Zed extension provides"}},
		{file: "zed-legacy/settings.json", servers: 1, stderr: []string{"note: ignored keys of Zed: context_servers.some-context-server.settings"}},
		{file: "gemini/.gemini/settings.json", servers: 6, stderr: []string{
			"note: ignored keys of Gemini CLI:",
			"warning: mcpServers.httpServerWithAuth.headers.Authorization: a credential written in plain text",
			"warning: mcpServers.pythonTools.env.DATABASE_URL: ${DB_CONNECTION_STRING} is not set",
		}},
		{file: "gemini-nested/.gemini/settings.json", servers: 3, stderr: []string{"note: mcpServers.unlisted-server: left out by Gemini CLI's allowed or excluded servers"}},
		{file: "codex/.codex/config.toml", servers: 3, stderr: []string{
			"note: ignored keys of Codex CLI: approval_policy, model",
			"note: mcp_servers.server_name.startup_timeout_sec: 20 s read as 20000 ms",
			"warning: mcp_servers.server_name.env.API_KEY: a credential written in plain text",
		}},
		{file: "goose/config.yaml", servers: 3, stderr: []string{"note: extensions.developer: a Goose builtin extension"}},
		{file: "continue/config.yaml", servers: 4, stderr: []string{"note: mcpServers[4]: uses a Continue hub block"}},
		{file: "continue-block/.continue/mcpServers/playwright-mcp.yaml", servers: 1, stderr: []string{"note: ignored keys of Continue: name, schema, version"}},
		{file: "lm-studio/mcp.json", servers: 1, stderr: []string{"warning: mcpServers.hf-mcp-server.headers.Authorization: a credential written in plain text"}},
		{file: "jetbrains/mcp.json", servers: 1},
		{file: "amazon-q/.amazonq/mcp.json", servers: 2},
		{file: "amazon-q-agent/cli-agents/aws-rust-agent.json", servers: 3, stderr: []string{"note: mcpServers.rust-analyzer: the agent's tools do not name @rust-analyzer; not started"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.FromSlash(dir + tc.file)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"validate", "--config", path}, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			if tc.wantCode == exitOK {
				if want := path + ": ok (" + strconv.Itoa(tc.servers) + " servers"; !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout %q lacks %q", stdout.String(), want)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q; got:\n%s", w, stderr.String())
				}
			}
			if tc.stderr == nil && stderr.Len() > 0 {
				t.Errorf("unexpected stderr:\n%s", stderr.String())
			}
		})
	}
}

// TestValidateReportsEverything: an unknown field does not hide the other
// problems. See #18.
func TestValidateReportsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"x_y": {"command": ""}}, "bogus": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"validate", "--config", path}, strings.NewReader(""), &stdout, &stderr); code != exitConfig {
		t.Fatalf("exit %d, want %d", code, exitConfig)
	}
	for _, w := range []string{"bogus: unknown field", `mcpServers.x_y: needs "command" (a stdio server) or "url" (an http or sse server)`} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q; got:\n%s", w, stderr.String())
		}
	}
}

// TestValidateReadsPinFile: validate reads the pin file serve would: a
// corrupt one fails with its path and what to do, an empty one (a write a
// crash cut short) is a warning.
func TestValidateReadsPinFile(t *testing.T) {
	dir := t.TempDir()
	pins := filepath.Join(dir, "pins.json")
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers":{"a":{"command":"true"}},"sanitize":{"pinTools":"block","pinFile":`+strconv.Quote(pins)+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	validate := func() (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"validate", "--config", cfg}, nil, &out, &errb)
		return code, errb.String()
	}
	if err := os.WriteFile(pins, []byte(`{"version":1,"pins":{`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stderr := validate(); code != exitConfig || !strings.Contains(stderr, pins) || !strings.Contains(stderr, "move it aside") {
		t.Errorf("corrupt pin file: exit %d, stderr %q; want %d naming the file and the fix", code, stderr, exitConfig)
	}
	if err := os.WriteFile(pins, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stderr := validate(); code != exitOK || !strings.Contains(stderr, "warning: pin file "+pins+" is empty") {
		t.Errorf("empty pin file: exit %d, stderr %q; want ok with a warning", code, stderr)
	}
}
