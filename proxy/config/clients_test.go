package config_test

import (
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
	file     string
	servers  int                              // server count, when loading succeeds
	ignored  []string                         // Notes.Ignored, exactly
	client   string                           // Notes.Client
	warnings []string                         // substrings, one per warning, in order
	wantErr  []string                         // substrings of the error; empty: must load
	check    func(*testing.T, *config.Config) // further checks on what loaded
}

// clientCorpus is shared with cmd/switchboard's validate test through the
// files themselves: each case names its expectations here.
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
		file:    ".claude.json",
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
			if len(c.Notes.Info) != 2 || !strings.Contains(c.Notes.Info[0].Error(), "read as seconds") {
				t.Errorf("info notes: %v", c.Notes.Info)
			}
		},
	},
	{
		file:    "roo-code/mcp_settings.json",
		servers: 2, client: "Cline",
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
}

// TestClientCorpus loads each real client file of testdata/clients
// unmodified and checks what it loads, or the documented error. See #18.
func TestClientCorpus(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range clientCorpus {
		path := filepath.Join("testdata/clients", tc.file)
		if tc.file == ".claude.json" {
			path = "testdata/clients/claude-code-user/.claude.json"
		}
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
				if err == nil {
					t.Fatal("loaded, want an error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q; got:\n%v", w, err)
					}
				}
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
			if len(c.Notes.Warnings) != len(tc.warnings) {
				t.Errorf("warnings: %v, want %d", c.Notes.Warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if i < len(c.Notes.Warnings) && !strings.Contains(c.Notes.Warnings[i].Error(), w) {
					t.Errorf("warning %d = %q, want %q", i, c.Notes.Warnings[i], w)
				}
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
	files, _ := filepath.Glob("testdata/clients/*/*.json")
	more, _ := filepath.Glob("testdata/clients/*/.*.json")
	deep, _ := filepath.Glob("testdata/clients/*/.*/mcp.json")
	all := append(append(files, more...), deep...)
	if len(all) < 12 {
		t.Errorf("want at least 12 client files, have %d", len(all))
	}
	for _, f := range all {
		if !seen[f] {
			t.Errorf("%s has no case in clientCorpus", f)
		}
	}
}

func server(t *testing.T, c *config.Config, name string) *config.Server {
	t.Helper()
	s := c.MCPServers[name]
	if s == nil {
		t.Fatalf("no server %q (have %v)", name, c.ServerNames())
	}
	return s
}

func wantEq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestClientRules pins the rules of docs/client-configs.md one by one.
func TestClientRules(t *testing.T) {
	env := map[string]string{"SET": "v", "BIN": "/opt/bin"}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.env"), []byte("# c\nGOOD=1\nhunter2-no-equals\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		in       string
		wantErr  []string
		notErr   []string
		ignored  string
		warnings string
		check    func(*testing.T, *config.Config)
	}{
		{name: "unknown top-level key without a client marker", in: `{"mcpServers": {"x_y": {"command": ""}}, "bogus": 1}`,
			wantErr: []string{"bogus: unknown field", `mcpServers.x_y: needs "command" (a stdio server) or "url" (an http or sse server)`},
			notErr:  []string{"url: required"}},
		{name: "marker makes other top-level keys the client's", in: `{"globalShortcut": "x", "darkMode": true, "mcpServers": {}}`,
			ignored: "darkMode globalShortcut"},
		{name: "a case slip stays an error next to a marker", in: `{"globalShortcut": "x", "mcpservers": {}}`,
			wantErr: []string{`mcpservers: unknown field (did you mean "mcpServers"?)`}},
		{name: "unknown key inside a server stays an error", in: `{"preferences": {}, "mcpServers": {"a": {"command": "x", "comand": "y"}}}`,
			wantErr: []string{"mcpServers.a.comand: unknown field"}},
		{name: "jsonc", in: "{\n // c\n \"mcpServers\": { /* d */ \"a\": {\"command\": \"x\", \"args\": [\"//not a comment\",],},\n },\n}",
			check: func(t *testing.T, c *config.Config) { wantEq(t, "arg", c.MCPServers["a"].Args[0], "//not a comment") }},
		{name: "disabledTools is not dropped silently", in: `{"mcpServers": {"a": {"command": "x", "disabledTools": ["rm"]}}}`,
			wantErr: []string{"mcpServers.a.disabledTools: not read by switchboard"}},
		{name: "serverUrl and url", in: `{"mcpServers": {"a": {"serverUrl": "http://h/mcp", "url": "http://h/mcp"}}}`,
			wantErr: []string{"mcpServers.a.serverUrl: Windsurf's name for url; the entry has both"}},
		{name: "serverUrl error path", in: `{"mcpServers": {"a": {"serverUrl": "ftp://h"}}}`,
			wantErr: []string{`mcpServers.a.serverUrl: want an absolute http or https URL, got "ftp://h"`}},
		{name: "short timeout outside Cline files is milliseconds", in: `{"mcpServers": {"a": {"command": "x", "timeout": 60}}}`,
			warnings: "mcpServers.a.timeout: 60 ms is too short to start a server; switchboard's timeout is milliseconds (write 60000 for 60 s)",
			check: func(t *testing.T, c *config.Config) {
				wantEq(t, "timeout", c.MCPServers["a"].ConnectTimeout(), 60*time.Millisecond)
			}},
		{name: "Cline seconds apply to every server of a Cline file", in: `{"mcpServers": {"a": {"command": "x", "timeout": 30}, "b": {"command": "y", "autoApprove": []}}}`,
			ignored: "mcpServers.b.autoApprove",
			check: func(t *testing.T, c *config.Config) {
				wantEq(t, "timeout", c.MCPServers["a"].ConnectTimeout(), 30*time.Second)
			}},
		{name: "variables", in: `{"mcpServers": {"a": {"command": "${BIN}/srv", "cwd": "${env:BIN}", "args": ["${SET}", "${SET:-d}", "${UNSET:-d}", "${env:SET}", "$${SET}", "${secret://env/X}"]}}}`,
			check: func(t *testing.T, c *config.Config) {
				a := c.MCPServers["a"]
				wantEq(t, "command", a.Command, "/opt/bin/srv")
				wantEq(t, "cwd", a.Cwd, "/opt/bin")
				wantEq(t, "args", strings.Join(a.Args, " "), "${SET} ${SET} d ${SET} $${SET} ${secret://env/X}")
			}},
		{name: "VS Code command variable", in: `{"mcpServers": {"a": {"command": "x", "args": ["${command:pick}"]}}}`,
			wantErr: []string{"mcpServers.a.args[0]: ${command:pick} is VS Code's command variable"}},
		{name: "unknown variable form", in: `{"mcpServers": {"a": {"command": "x", "env": {"K": "${A-B}"}}}}`,
			wantErr: []string{"mcpServers.a.env.K: ${A-B} is not a variable switchboard knows"}},
		{name: "envFile errors name the line, not its content", in: `{"mcpServers": {"a": {"command": "x", "envFile": "bad.env"}, "b": {"command": "x", "envFile": "missing.env"}}}`,
			wantErr: []string{"mcpServers.a.envFile: " + filepath.Join(dir, "bad.env") + ": line 3: want KEY=VALUE", "mcpServers.b.envFile: read " + filepath.Join(dir, "missing.env")},
			notErr:  []string{"hunter2"}},
		{name: "envFile on a remote server", in: `{"mcpServers": {"a": {"url": "http://h/mcp", "envFile": ".env"}}}`,
			wantErr: []string{`mcpServers.a.envFile: not allowed for a server with a url; use headers`}},
		{name: "switchboard serving itself", in: `{"mcpServers": {"a": {"command": "switchboard"}, "b": {"command": "/bin/switchboard", "args": ["--stdio"]}, "c": {"command": "switchboard", "args": ["tools"]}, "demo": {"command": "switchboard", "args": ["demo-server", "clock"]}}}`,
			wantErr: []string{"mcpServers.a.command: runs switchboard itself (switchboard serve)", "mcpServers.b.command: runs switchboard itself (switchboard serve)", "mcpServers.c.command: runs switchboard itself (switchboard tools)"},
			notErr:  []string{"mcpServers.demo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load([]byte(tc.in), config.Source{
				Path: filepath.Join(dir, "mcp.json"), HomeDir: "/home/t",
				Getenv: func(k string) string { return env[k] },
			})
			if err == nil {
				err = c.Validate()
			}
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("accepted, want an error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q; got:\n%v", w, err)
					}
				}
				for _, w := range tc.notErr {
					if strings.Contains(err.Error(), w) {
						t.Errorf("error holds %q; got:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantEq(t, "ignored", strings.Join(c.Notes.Ignored, " "), tc.ignored)
			var ws []string
			for _, w := range c.Notes.Warnings {
				ws = append(ws, w.Error())
			}
			wantEq(t, "warnings", strings.Join(ws, "\n"), tc.warnings)
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// TestParseWithoutLoad: a config that only went through Parse still
// says what VS Code's ${input:} is, and refuses an envFile it never read.
func TestParseWithoutLoad(t *testing.T) {
	c, err := config.Parse([]byte(`{"servers": {"a": {"type": "stdio", "command": "x", "envFile": ".env", "env": {"K": "${input:k}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	for _, w := range []string{"servers.a.env.K: ${input:k} is VS Code's prompt-for-input syntax", "servers.a.envFile: not read"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q; got:\n%v", w, err)
		}
	}
}
