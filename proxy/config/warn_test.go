package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/secrets"
)

// TestWarningsAWSHelper: a secret://aws reference is read by the secrets
// helper, and a config that has one warns, at each field that holds one,
// when the helper cannot be found.
func TestWarningsAWSHelper(t *testing.T) {
	in := `{"mcpServers": {
	  "a": {"command": "x", "args": ["--token", "${secret://aws/app#token}"], "env": {"DB": "secret://aws/db", "E": "secret://env/E"}},
	  "b": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${secret://aws/api}"}},
	  "c": {"command": "y", "env": {"V": "secret://vault/kv/c#k"}}}}`
	dir := t.TempDir()
	helper := filepath.Join(dir, secrets.HelperName)
	if err := os.WriteFile(helper, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    map[string]string
		want   []string
		reason string
	}{
		{name: "not found", env: map[string]string{"PATH": t.TempDir()},
			want:   []string{"mcpServers.a.args[1]", "mcpServers.a.env.DB", "mcpServers.b.headers.Authorization"},
			reason: "secret://aws is read by the switchboard-secrets helper, not found"},
		{name: "named, missing", env: map[string]string{secrets.HelperEnv: filepath.Join(dir, "nope")},
			want:   []string{"mcpServers.a.args[1]", "mcpServers.a.env.DB", "mcpServers.b.headers.Authorization"},
			reason: "SWITCHBOARD_SECRETS_HELPER names the secrets helper, which reads secret://aws: stat " + filepath.Join(dir, "nope")},
		{name: "on PATH", env: map[string]string{"PATH": dir}},
		{name: "named", env: map[string]string{secrets.HelperEnv: helper, "PATH": t.TempDir()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(secrets.HelperEnv, "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := load(t, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range c.Warnings() {
				got = append(got, w.Path)
				if !strings.Contains(w.Reason, tt.reason) || !strings.HasSuffix(w.Reason, "; the server will not start") {
					t.Errorf("%s: reason %q, want %q", w.Path, w.Reason, tt.reason)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("warnings at %q, want %q", got, tt.want)
			}
		})
	}
}
