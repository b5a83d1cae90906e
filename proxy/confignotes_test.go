package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// TestServeWarnsWhatValidatePrints: serve logs config.Warnings, the list
// `switchboard validate` prints, and nothing else at Warn; a ${VAR} or
// secret reference is not a plaintext credential. See "First contact".
func TestServeWarnsWhatValidatePrints(t *testing.T) {
	c, err := config.Load([]byte(`{"mcpServers": {
	  "a": {"command": "x", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "API_KEY": "secret://env/K", "DB_PASSWORD": "hunter2"}},
	  "b": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${MISSING}"}}}}`),
		config.Source{Getenv: func(k string) string { return map[string]string{"GITHUB_TOKEN": "g"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logNotes(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace, JSONFormat: true}), c)
	var logged []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if rec["@level"] == "warn" {
			logged = append(logged, rec["reason"].(string))
		}
	}
	var want []string
	for _, w := range c.Warnings() {
		want = append(want, w.Error())
	}
	if strings.Join(logged, "\n") != strings.Join(want, "\n") {
		t.Errorf("serve warns:\n%s\nvalidate prints:\n%s", strings.Join(logged, "\n"), strings.Join(want, "\n"))
	}
	if len(want) != 2 || !strings.HasPrefix(want[0], "mcpServers.a.env.DB_PASSWORD: a credential written in plain text") ||
		!strings.HasPrefix(want[1], "mcpServers.b.headers.Authorization: ${MISSING} is not set") {
		t.Errorf("warnings = %q", want)
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Error("a warning holds the credential")
	}
}
