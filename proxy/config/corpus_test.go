package config_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// corpusEnv is the environment the client corpus loads with: some of the
// variables the files name are set, the others are not.
var corpusEnv = map[string]string{
	"API_KEY":          "k-123",
	"MY_SERVICE_TOKEN": "t-456",
	"GITHUB_TOKEN":     "ghp-789",
	"FIGMA_KEY":        "f-000",
}

const corpusHome = "/home/tester"

// clientCase is one file of testdata/clients, loaded unmodified.
type clientCase struct {
	file     string                           // path under testdata/clients
	servers  int                              // server count, when loading succeeds
	ignored  []string                         // Notes.Ignored, exactly
	client   string                           // Notes.Client
	info     []string                         // substrings, one per Notes.Info, in order
	warnings []string                         // substrings, one per Warnings(), in order
	wantErr  []string                         // substrings of the error; empty: must load
	check    func(*testing.T, *config.Config) // further checks on what loaded
}

// clientCorpus is shared with cmd/switchboard's validate test through the
// files themselves: each case names its expectations here. Every file is
// written exactly as its client's documentation shows it.
var clientCorpus = []clientCase{
	{
		file:    "claude-desktop/claude_desktop_config.json",
		servers: 2, client: "Claude Desktop",
		ignored: []string{"globalShortcut", "preferences"},
		check: func(t *testing.T, c *config.Config) {
			gh := server(t, c, "github")
			wantEq(t, "transport", gh.EffectiveTransport(), "stdio")
			wantEq(t, "env", gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"], "secret://env/GITHUB_TOKEN")
		},
	},
	{
		file:    "claude-code/.mcp.json",
		servers: 3,
		check: func(t *testing.T, c *config.Config) {
			api := server(t, c, "api-server")
			wantEq(t, "api transport", api.EffectiveTransport(), "http")
			wantEq(t, "url default", api.URL, "https://api.example.com/mcp")
			// A set variable stays a reference; its value is read at start.
			wantEq(t, "header", api.Headers["Authorization"], "Bearer ${API_KEY}")
			sh := server(t, c, "shared-server")
			wantEq(t, "env default", sh.Env["CACHE_DIR"], "/tmp/cache")
			wantEq(t, "sentry transport", server(t, c, "sentry").EffectiveTransport(), "sse")
		},
	},
	{
		file:    "claude-code-user/.claude.json",
		servers: 1, client: "Claude Code",
		ignored:  []string{"autoUpdates", "editorMode", "installMethod", "numStartups", "projects", "theme", "tipsHistory"},
		warnings: []string{"mcpServers.airtable.env.AIRTABLE_API_KEY: ${AIRTABLE_API_KEY} is not set; it expands to an empty string"},
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "unset env", server(t, c, "airtable").Env["AIRTABLE_API_KEY"], "")
		},
	},
	{
		file:    "cursor-project/.cursor/mcp.json",
		servers: 3,
		check: func(t *testing.T, c *config.Config) {
			s := server(t, c, "server-name")
			wantEq(t, "env wins over envFile", s.Env["API_KEY"], "${API_KEY}")
			wantEq(t, "envFile", s.Env["LOG_LEVEL"], "debug")
			wantEq(t, "envFile export+quotes", s.Env["REGION"], "eu-west-1")
			wantEq(t, "envFile cleared", s.EnvFile, "")
			ws, _ := filepath.Abs("testdata/clients/cursor-project")
			wantEq(t, "workspaceFolder", server(t, c, "local-docs").Args[0], ws+"/tools/docs_server.py")
			r := server(t, c, "remote-server")
			wantEq(t, "url-only transport", r.EffectiveTransport(), "http")
			wantEq(t, "url-only unset", r.TransportUnset(), true)
			wantEq(t, "header", r.Headers["Authorization"], "Bearer ${MY_SERVICE_TOKEN}")
		},
	},
	{
		file:    "cursor-global/mcp.json",
		servers: 2,
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "userHome", server(t, c, "notes").Args[0], corpusHome+"/mcp-servers/notes/index.js")
			wantEq(t, "url-only", server(t, c, "remote").TransportUnset(), true)
		},
	},
	{
		file:    "vscode/.vscode/mcp.json",
		servers: 3, client: "VS Code",
		ignored:  []string{"inputs"},
		warnings: []string{`servers.memory.env.PERPLEXITY_API_KEY: ${PERPLEXITY_API_KEY} is not set`},
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "github", server(t, c, "github").EffectiveTransport(), "http")
			wantEq(t, "github type given", server(t, c, "github").TransportUnset(), false)
			wantEq(t, "fetch", server(t, c, "fetch").EffectiveTransport(), "stdio")
			ws, _ := filepath.Abs("testdata/clients/vscode")
			wantEq(t, "workspaceFolder is the project", server(t, c, "memory").Env["MEMORY_FILE_PATH"], ws+"/.memory.json")
		},
	},
	{
		file: "vscode-input/.vscode/mcp.json",
		wantErr: []string{
			"servers.Perplexity.env.PERPLEXITY_API_KEY: ${input:perplexity-key} is VS Code's prompt-for-input syntax",
			"write ${env:NAME}",
		},
	},
	{
		file:    "vscode-both/.vscode/mcp.json",
		wantErr: []string{"servers: VS Code's name for mcpServers; the file has both, keep one"},
	},
	{
		file:    "cline/cline_mcp_settings.json",
		servers: 4, client: "Cline",
		info: []string{"mcpServers.remote-tools.timeout: 300 read as seconds", "mcpServers.weather.timeout: 60 read as seconds, Cline's unit"},
		ignored: []string{
			"mcpServers.brave-search.alwaysAllow",
			"mcpServers.remote-tools.autoApprove",
			"mcpServers.weather.autoApprove",
			`mcpServers["github.com/modelcontextprotocol/servers/tree/main/src/github"].autoApprove`,
		},
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "weather timeout", server(t, c, "weather").ConnectTimeout(), 60*time.Second)
			rt := server(t, c, "remote-tools")
			wantEq(t, "remote timeout", rt.ConnectTimeout(), 300*time.Second)
			wantEq(t, "streamableHttp", rt.EffectiveTransport(), "http")
			wantEq(t, "disabled", server(t, c, "brave-search").IsEnabled(), false)
			wantEq(t, "enabled", server(t, c, "weather").IsEnabled(), true)
			wantEq(t, "default timeout", server(t, c, "brave-search").ConnectTimeout(), config.DefaultTimeoutMS*time.Millisecond)
		},
	},
	{
		file:    "roo-code/mcp_settings.json",
		servers: 2, client: "Cline",
		info:     []string{"mcpServers.local-server.timeout: 120 read as seconds"},
		ignored:  []string{"mcpServers.legacy-remote.alwaysAllow", "mcpServers.local-server.alwaysAllow", "mcpServers.local-server.watchPaths"},
		warnings: []string{"mcpServers.legacy-remote.headers.Authorization: ${REMOTE_TOKEN} is not set"},
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "timeout", server(t, c, "local-server").ConnectTimeout(), 120*time.Second)
			wantEq(t, "transportType", server(t, c, "legacy-remote").EffectiveTransport(), "sse")
		},
	},
	{
		file:    "windsurf/mcp_config.json",
		servers: 2,
		check: func(t *testing.T, c *config.Config) {
			f := server(t, c, "figma")
			wantEq(t, "serverUrl", f.URL, "https://mcp.figma.com/mcp")
			wantEq(t, "transport", f.EffectiveTransport(), "http")
			wantEq(t, "unset", f.TransportUnset(), true)
			wantEq(t, "header", f.Headers["X-Api-Key"], "${FIGMA_KEY}")
			wantEq(t, "env", server(t, c, "github").Env["GITHUB_PERSONAL_ACCESS_TOKEN"], "${GITHUB_TOKEN}")
		},
	},
	{
		file:    "sse-url-only/mcp.json",
		servers: 1,
		check: func(t *testing.T, c *config.Config) {
			s := server(t, c, "legacy-sse")
			wantEq(t, "transport left to the upstream", s.TransportUnset(), true)
			wantEq(t, "url", s.URL, "http://localhost:8000/sse")
		},
	},
	{
		file: "self-start/claude_desktop_config.json",
		wantErr: []string{
			"mcpServers.switchboard.command: runs switchboard itself (switchboard serve)",
		},
		check: func(t *testing.T, c *config.Config) {},
	},
	{
		file:     "unset-var/.mcp.json",
		servers:  1,
		warnings: []string{"mcpServers.db.args[3]: ${DATABASE_URL} is not set; it expands to an empty string"},
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "unset arg", server(t, c, "db").Args[3], "")
		},
	},
	{
		file:    "zed/settings.json",
		servers: 2, client: "Zed",
		ignored: []string{"agent", "buffer_font_size", "context_servers.mcp-server-context7", "context_servers.your-mcp-server.source", "theme", "ui_font_size"},
		info:    []string{"context_servers.mcp-server-context7: a server a Zed extension provides"},
		check: func(t *testing.T, c *config.Config) {
			s := server(t, c, "your-mcp-server")
			wantEq(t, "command", s.Command, "some-command")
			wantEq(t, "args", strings.Join(s.Args, " "), "arg-1 arg-2")
			wantEq(t, "transport", s.EffectiveTransport(), "stdio")
			wantEq(t, "plain shape", server(t, c, "local-mcp-server").Command, "some-command")
		},
	},
	{
		file:    "zed-legacy/settings.json",
		servers: 1, client: "Zed",
		ignored: []string{"context_servers.some-context-server.settings"},
		check: func(t *testing.T, c *config.Config) {
			s := server(t, c, "some-context-server")
			wantEq(t, "command.path", s.Command, "some-command")
			wantEq(t, "command.args", strings.Join(s.Args, " "), "arg-1 arg-2")
		},
	},
	{
		file:    "gemini/.gemini/settings.json",
		servers: 6, client: "Gemini CLI",
		ignored: []string{"mcpServers.googleCloudServer.authProviderType", "mcpServers.googleCloudServer.oauth", "mcpServers.nodeServer.trust", "selectedAuthType", "theme"},
		warnings: []string{
			"mcpServers.httpServerWithAuth.headers.Authorization: a credential written in plain text",
			"mcpServers.pythonTools.env.API_KEY: ${EXTERNAL_API_KEY} is not set",
			"mcpServers.pythonTools.env.DATABASE_URL: ${DB_CONNECTION_STRING} is not set",
		},
		check: func(t *testing.T, c *config.Config) {
			h := server(t, c, "httpServerWithAuth")
			wantEq(t, "httpUrl", h.URL, "http://localhost:3000/mcp")
			wantEq(t, "httpUrl transport", h.EffectiveTransport(), "http")
			wantEq(t, "request timeout", h.ToolTimeout(), 5*time.Second)
			wantEq(t, "url is SSE", server(t, c, "discoveredServer").EffectiveTransport(), "sse")
			f := server(t, c, "filteredServer")
			wantEq(t, "includeTools", strings.Join(f.Tools.Allow, " "), "mcp_filteredServer_safe_tool mcp_filteredServer_file_reader mcp_filteredServer_data_processor")
			wantEq(t, "commented excludeTools", len(f.Tools.Deny), 0)
		},
	},
	{
		file:    "gemini-nested/.gemini/settings.json",
		servers: 3, client: "Gemini CLI",
		ignored: []string{"general", "mcp", "telemetry", "tools", "ui"},
		info:    []string{"mcpServers.experimental-server: left out by Gemini CLI's allowed or excluded servers", "mcpServers.unlisted-server: left out"},
		check: func(t *testing.T, c *config.Config) {
			s := server(t, c, "my-trusted-server")
			wantEq(t, "excludeTools", strings.Join(s.Tools.Deny, " "), "mcp_my-trusted-server_dangerous_tool mcp_my-trusted-server_file_deleter")
			wantEq(t, "allowed", s.IsEnabled(), true)
			wantEq(t, "excluded wins", server(t, c, "experimental-server").IsEnabled(), false)
			wantEq(t, "not allowed", server(t, c, "unlisted-server").IsEnabled(), false)
			if c.Tools != nil || c.Telemetry != nil {
				t.Errorf("Gemini's tools and telemetry read as switchboard's: %v %v", c.Tools, c.Telemetry)
			}
		},
	},
	{
		file:    "codex/.codex/config.toml",
		servers: 3, client: "Codex CLI",
		ignored: []string{"approval_policy", "model", "sandbox_mode", "sandbox_workspace_write"},
		info:    []string{"mcp_servers.server_name.startup_timeout_sec: 20 s read as 20000 ms", "mcp_servers.server_name.tool_timeout_sec: 30 s"},
		warnings: []string{
			"mcp_servers.figma.headers.Authorization: ${FIGMA_OAUTH_TOKEN} is not set",
			"mcp_servers.figma.headers.X-Example-Features: ${EXAMPLE_FEATURES} is not set",
			"mcp_servers.server_name.env.API_KEY: a credential written in plain text",
			"mcp_servers.server_name.env.API_KEY2: ${API_KEY2} is not set",
		},
		check: func(t *testing.T, c *config.Config) {
			s := server(t, c, "server_name")
			wantEq(t, "startup_timeout_sec", s.ConnectTimeout(), 20*time.Second)
			wantEq(t, "tool_timeout_sec", s.ToolTimeout(), 30*time.Second)
			wantEq(t, "cwd", s.Cwd, "/Users/me/code/my-server")
			wantEq(t, "enabled_tools", strings.Join(s.Tools.Allow, " "), "mcp_server-name_search mcp_server-name_summarize")
			wantEq(t, "disabled_tools", strings.Join(s.Tools.Deny, " "), "mcp_server-name_search")
			f := server(t, c, "figma")
			wantEq(t, "url transport", f.EffectiveTransport(), "http")
			wantEq(t, "bearer_token_env_var", f.Headers["Authorization"], "Bearer ")
			wantEq(t, "http_headers", f.Headers["X-Figma-Region"], "us-east-1")
			wantEq(t, "required", strings.Join(c.RequireReady, " "), "figma")
			d := server(t, c, "docs")
			wantEq(t, "enabled", d.IsEnabled(), false)
			wantEq(t, "startup_timeout_ms", d.ConnectTimeout(), 20*time.Second)
			wantEq(t, "env table", d.Env["DOCS_ROOT"], "/srv/docs")
		},
	},
	{
		file:    "goose/config.yaml",
		servers: 3, client: "Goose",
		ignored: []string{
			"GOOSE_CLI_MIN_PRIORITY", "GOOSE_MODE", "GOOSE_TEMPERATURE", "GOOSE_TOOLSHIM", "active_provider",
			"extensions.computercontroller", "extensions.developer", "extensions.filesystem.name",
			"extensions.github.name", "extensions.remote-tools.name", "providers",
		},
		info: []string{
			"extensions.computercontroller: a Goose platform extension", "extensions.developer: a Goose builtin extension",
			"extensions.filesystem.timeout: 300 s read as 300000 ms (timeout, toolTimeout)", "extensions.github.timeout", "extensions.remote-tools.timeout",
		},
		warnings: []string{"extensions.github.env.GITHUB_PERSONAL_ACCESS_TOKEN: ${GITHUB_PERSONAL_ACCESS_TOKEN} is not set"},
		check: func(t *testing.T, c *config.Config) {
			fs := server(t, c, "filesystem")
			wantEq(t, "cmd", fs.Command, "npx")
			wantEq(t, "timeout", fs.ConnectTimeout(), 300*time.Second)
			wantEq(t, "timeout per call", fs.ToolTimeout(), 300*time.Second)
			r := server(t, c, "remote-tools")
			wantEq(t, "uri", r.URL, "https://example.com/mcp")
			wantEq(t, "streamable_http", r.EffectiveTransport(), "http")
			gh := server(t, c, "github")
			wantEq(t, "enabled: false", gh.IsEnabled(), false)
			wantEq(t, "available_tools", strings.Join(gh.Tools.Allow, " "), "mcp_github_get_issue mcp_github_list_issues")
		},
	},
	{
		file:    "continue/config.yaml",
		servers: 4, client: "Continue",
		ignored: []string{"mcpServers[4]", "models", "name", "schema", "version"},
		info:    []string{"mcpServers[4]: uses a Continue hub block"},
		warnings: []string{
			`mcpServers["Supabase MCP"].args[3]: ${SUPABASE_TOKEN} is not set`,
			`mcpServers["Supabase MCP"].env.SUPABASE_TOKEN: ${SUPABASE_TOKEN} is not set`,
		},
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "stdio", server(t, c, "SQLite MCP").EffectiveTransport(), "stdio")
			wantEq(t, "sse", server(t, c, "Name").EffectiveTransport(), "sse")
			wantEq(t, "streamable-http", server(t, c, "Streamable").EffectiveTransport(), "http")
		},
	},
	{
		file:    "continue-block/.continue/mcpServers/playwright-mcp.yaml",
		servers: 1, client: "Continue",
		ignored: []string{"name", "schema", "version"},
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "args", server(t, c, "Browser search").Args[0], "@playwright/mcp@latest")
		},
	},
	{
		file:     "lm-studio/mcp.json",
		servers:  1,
		warnings: []string{"mcpServers.hf-mcp-server.headers.Authorization: a credential written in plain text"},
		check: func(t *testing.T, c *config.Config) {
			s := server(t, c, "hf-mcp-server")
			wantEq(t, "url-only is auto", s.TransportUnset(), true)
		},
	},
	{
		file:    "jetbrains/mcp.json",
		servers: 1,
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "args", server(t, c, "filesystem").Args[2], "/Users/JohnDoe/Desktop")
		},
	},
	{
		file:    "amazon-q/.amazonq/mcp.json",
		servers: 2,
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "timeout", server(t, c, "git").ConnectTimeout(), 120*time.Second)
		},
	},
	{
		file:    "amazon-q-agent/cli-agents/aws-rust-agent.json",
		servers: 3, client: "Amazon Q",
		ignored: []string{"allowedTools", "description", "hooks", "model", "name", "resources", "toolAliases", "tools", "toolsSettings", "useLegacyMcpJson"},
		info: []string{
			"mcpServers.fetch: the agent's tools name only some of its tools",
			"mcpServers.rust-analyzer: the agent's tools do not name @rust-analyzer; not started",
			"mcpServers.rust-analyzer.timeout: Amazon Q's per-request timeout, read as toolTimeout",
		},
		check: func(t *testing.T, c *config.Config) {
			wantEq(t, "@fetch/fetch_url", strings.Join(server(t, c, "fetch").Tools.Allow, " "), "mcp_fetch_fetch_url")
			if server(t, c, "git").Tools != nil {
				t.Errorf("@git: every tool, got %v", server(t, c, "git").Tools)
			}
			ra := server(t, c, "rust-analyzer")
			wantEq(t, "not in tools", ra.IsEnabled(), false)
			wantEq(t, "timeout per request", ra.ToolTimeout(), 120*time.Second)
		},
	},
}

// TestClientCorpus loads each real client file of testdata/clients
// unmodified and checks what it loads, or the documented error. See #18.
func TestClientCorpus(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range clientCorpus {
		path := filepath.Join("testdata/clients", filepath.FromSlash(tc.file))
		seen[path] = true
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(data, config.Source{
				Path:    path,
				Getenv:  func(k string) string { return corpusEnv[k] },
				HomeDir: corpusHome,
			})
			if err == nil {
				err = c.Validate()
			}
			if len(tc.wantErr) > 0 {
				wantErrHas(t, err, tc.wantErr)
				if strings.Contains(err.Error(), "demo-server") || strings.Contains(err.Error(), "mcpServers.clock") {
					t.Errorf("the demo-server entry was refused too:\n%v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			wantEq(t, "servers", len(c.ServerNames()), tc.servers)
			wantEq(t, "ignored", strings.Join(c.Notes.Ignored, " "), strings.Join(tc.ignored, " "))
			wantEq(t, "client", c.Notes.Client, tc.client)
			wantNotes(t, "info", c.Notes.Info, tc.info)
			wantNotes(t, "warnings", c.Warnings(), tc.warnings)
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
	var all []string
	err := filepath.WalkDir("testdata/clients", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) != ".env" {
			all = append(all, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 20 {
		t.Errorf("want at least 20 client files, have %d", len(all))
	}
	for _, f := range all {
		if !seen[f] {
			t.Errorf("%s has no case in clientCorpus", f)
		}
	}
}

// wantNotes checks that got has one entry per substring of want, in order.
func wantNotes(t *testing.T, what string, got []*config.FieldError, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %v, want %d", what, got, len(want))
	}
	for i, w := range want {
		if i < len(got) && !strings.Contains(got[i].Error(), w) {
			t.Errorf("%s %d = %q, want %q", what, i, got[i], w)
		}
	}
}
