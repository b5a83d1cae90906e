package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

func server(t *testing.T, c *config.Config, name string) *config.Server {
	t.Helper()
	s := c.MCPServers[name]
	if s == nil {
		t.Fatalf("no server %q (have %v)", name, c.ServerNames())
	}
	return s
}

// wantErrHas fails unless err holds every substring of want.
func wantErrHas(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted, want an error")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q; got:\n%v", w, err)
		}
	}
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
				wantErrHas(t, err, tc.wantErr)
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
