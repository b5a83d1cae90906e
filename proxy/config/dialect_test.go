package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// load loads in as a file in a temporary directory, with env as the
// environment, and validates it.
func load(t *testing.T, in string, env map[string]string) (*config.Config, error) {
	t.Helper()
	c, err := config.Load([]byte(in), config.Source{
		Path: filepath.Join(t.TempDir(), "settings"), HomeDir: "/home/t",
		Getenv: func(k string) string { return env[k] },
	})
	if err == nil {
		err = c.Validate()
	}
	return c, err
}

// TestDialectRules pins what docs/client-configs.md says of the clients
// that keep their servers among their own settings, one rule at a time.
func TestDialectRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		wantErr []string
		check   func(*testing.T, *config.Config)
	}{
		{name: "TOML syntax error names the line", in: "[mcp_servers.a]\ncommand = \"x\"\nargs = [\n",
			wantErr: []string{"config: TOML: line 3"}},
		{name: "TOML sniffed after comments", in: "# Codex\n\n[mcp_servers.a]\ncommand = \"x\"\n",
			check: func(t *testing.T, c *config.Config) { wantEq(t, "command", server(t, c, "a").Command, "x") }},
		{name: "Codex error paths name Codex's keys", in: "[mcp_servers.a]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"not a name\"\nstartup_timeout_sec = \"20\"\n",
			wantErr: []string{"mcp_servers.a.bearer_token_env_var: want an environment variable name", "mcp_servers.a.startup_timeout_sec: want a positive number of seconds"}},
		{name: "Codex bearer token next to an Authorization header", in: "[mcp_servers.a]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"T\"\nhttp_headers = { Authorization = \"x\" }\n",
			wantErr: []string{"mcp_servers.a.bearer_token_env_var: the entry sets an Authorization header too"}},
		{name: "Codex fractional seconds", in: "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 2.5\n",
			check: func(t *testing.T, c *config.Config) {
				wantEq(t, "timeout", server(t, c, "a").TimeoutMS != nil && *server(t, c, "a").TimeoutMS == 2500, true)
			}},
		{name: "an unknown Codex key stays an error", in: "[mcp_servers.a]\ncommand = \"x\"\ncomand = \"y\"\n",
			wantErr: []string{`mcp_servers.a.comand: unknown field (did you mean "command"?)`}},
		{name: "Zed command object and args both", in: `{"context_servers": {"a": {"command": {"path": "x", "args": ["1"]}, "args": ["2"]}}}`,
			wantErr: []string{"context_servers.a.command.args: args is also set outside command"}},
		{name: "Zed error paths name context_servers", in: `{"context_servers": {"a": {"url": "ftp://h"}}}`,
			wantErr: []string{`context_servers.a.url: want an absolute http or https URL`}},
		{name: "Continue server without a name", in: "mcpServers:\n  - command: x\n",
			wantErr: []string{"mcpServers[0].name: required"}},
		{name: "Continue duplicate names", in: "mcpServers:\n  - {name: a, command: x}\n  - {name: a, command: y}\n",
			wantErr: []string{`mcpServers[1].name: duplicate server name "a"`}},
		{name: "Continue secrets are environment variables", in: "mcpServers:\n  - name: a\n    command: x\n    env:\n      K: ${{ secrets.TOKEN }}\n",
			check: func(t *testing.T, c *config.Config) { wantEq(t, "env", server(t, c, "a").Env["K"], "${TOKEN}") }},
		{name: "Goose seconds that are not a number", in: "extensions:\n  a:\n    type: stdio\n    cmd: x\n    timeout: soon\n",
			wantErr: []string{"extensions.a.timeout: want a positive number of seconds"}},
		{name: "Gemini httpUrl and url both", in: `{"mcpServers": {"a": {"httpUrl": "https://h/mcp", "url": "https://h/sse"}}}`,
			wantErr: []string{"mcpServers.a.httpUrl: Gemini CLI's name for url; the entry has both"}},
		{name: "Gemini $NAME in env", in: `{"mcpServers": {"a": {"command": "x", "trust": false, "env": {"K": "$TOKEN", "L": "pre-$TOKEN"}}}}`,
			check: func(t *testing.T, c *config.Config) {
				a := server(t, c, "a")
				wantEq(t, "K", a.Env["K"], "${TOKEN}")
				wantEq(t, "L", a.Env["L"], "pre-${TOKEN}")
			}},
		{name: "$NAME stays literal outside Gemini files", in: `{"mcpServers": {"a": {"command": "x", "env": {"K": "$TOKEN"}}}}`,
			check: func(t *testing.T, c *config.Config) { wantEq(t, "K", server(t, c, "a").Env["K"], "$TOKEN") }},
		{name: "include and exclude follow toolPrefix and namespace", in: `{"mcpServers": {"a": {"command": "x", "toolPrefix": "p", "includeTools": ["t1"]}, "b": {"command": "y", "namespace": false, "excludeTools": ["t 2"]}, "c": {"command": "z", "includeTools": ["read_*"], "tools": {"allow": ["mcp_c_list"]}}}}`,
			check: func(t *testing.T, c *config.Config) {
				wantEq(t, "toolPrefix", strings.Join(server(t, c, "a").Tools.Allow, " "), "mcp_p_t1")
				wantEq(t, "bare", strings.Join(server(t, c, "b").Tools.Deny, " "), "t_2")
				wantEq(t, "merged glob", strings.Join(server(t, c, "c").Tools.Allow, " "), "mcp_c_list mcp_c_read_*")
			}},
		{name: "includeTools not a list", in: `{"mcpServers": {"a": {"command": "x", "includeTools": "t1"}}}`,
			wantErr: []string{"mcpServers.a.includeTools: want a list of tool names"}},
		{name: "Amazon Q server pattern", in: `{"useLegacyMcpJson": false, "mcpServers": {"git-a": {"command": "x"}, "git-b": {"command": "y"}, "other": {"command": "z"}}, "tools": ["@git-*"]}`,
			check: func(t *testing.T, c *config.Config) {
				wantEq(t, "git-a", server(t, c, "git-a").IsEnabled(), true)
				wantEq(t, "other", server(t, c, "other").IsEnabled(), false)
			}},
		{name: "a client's settings file keeps switchboard's own keys, but not the client's of the same name", in: `{"context_servers": {"a": {"command": "x"}}, "telemetry": {"metrics": false}, "shutdownTimeout": 20000, "vim_mode": true}`,
			check: func(t *testing.T, c *config.Config) {
				wantEq(t, "shutdownTimeout", c.ShutdownTimeout(), 20*time.Second)
				wantEq(t, "Zed's telemetry", c.Telemetry == nil, true)
				wantEq(t, "ignored", strings.Join(c.Notes.Ignored, " "), "telemetry vim_mode")
			}},
		{name: "Amazon Q tools star", in: `{"toolAliases": {}, "mcpServers": {"a": {"command": "x"}}, "tools": ["*"]}`,
			check: func(t *testing.T, c *config.Config) { wantEq(t, "enabled", server(t, c, "a").IsEnabled(), true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.in, map[string]string{"TOKEN": "t"})
			if len(tc.wantErr) > 0 {
				wantErrHas(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// TestWarningsPlaintext: validate and serve share Config.Warnings, and a
// reference of any kind is not a plaintext credential. See "First contact".
func TestWarningsPlaintext(t *testing.T) {
	in := `{"mcpServers": {
	  "a": {"command": "x", "env": {
	    "LITERAL_TOKEN": "hunter2", "REF_TOKEN": "${SET}", "ENV_TOKEN": "${env:SET}", "UNSET_TOKEN": "${UNSET}",
	    "DEFAULT_TOKEN": "${UNSET:-d}", "SECRET_TOKEN": "secret://env/S", "EMBEDDED_TOKEN": "${secret://env/S}",
	    "PLAIN": "not a credential", "EMPTY_TOKEN": ""}},
	  "b": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer abc", "X-Api-Key": "Bearer ${UNSET}"}}},
	 "agents": {"list": [{"id": "r", "mcp": {"servers": {"c": {"command": "y", "env": {"API_KEY": "k"}}}}}]}}`
	c, err := load(t, in, map[string]string{"SET": "v"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range c.Warnings() {
		got = append(got, w.Error())
		if strings.Contains(w.Error(), "hunter2") || strings.Contains(w.Error(), "abc") {
			t.Errorf("warning holds a value: %s", w)
		}
	}
	want := []string{
		"agents.list[0].mcp.servers.c.env.API_KEY: a credential written in plain text",
		"mcpServers.a.env.LITERAL_TOKEN: a credential written in plain text",
		"mcpServers.a.env.UNSET_TOKEN: ${UNSET} is not set",
		"mcpServers.b.headers.Authorization: a credential written in plain text",
		"mcpServers.b.headers.X-Api-Key: ${UNSET} is not set",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// TestUnknownFieldSuggestion: an unknown field names the known field it
// is a typo of, by case or edit distance, and nothing when none is close.
func TestUnknownFieldSuggestion(t *testing.T) {
	for in, want := range map[string]string{
		`{"mcpServer": {}}`:                                  `mcpServer: unknown field (did you mean "mcpServers"?)`,
		`{"MCPSERVERS": {}}`:                                 `MCPSERVERS: unknown field (did you mean "mcpServers"?)`,
		`{"mcpServers": {"a": {"comand": "x"}}}`:             `mcpServers.a.comand: unknown field (did you mean "command"?)`,
		`{"mcpServers": {"a": {"command": "x", "arg": []}}}`: `mcpServers.a.arg: unknown field (did you mean "args"?)`,
		`{"mcpServers": {"a": {"command": "x", "zzz": 1}}}`:  `mcpServers.a.zzz: unknown field`,
	} {
		_, err := config.Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
		if strings.HasSuffix(want, "unknown field") && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%s: suggests a field far from it: %v", in, err)
		}
	}
}
