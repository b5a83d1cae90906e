package config_test

import (
	"encoding/json"
	"testing"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// FuzzParse: whatever parses validates and digests deterministically, and
// the digest survives a round trip through the canonical JSON.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"secret://env/K"}}}}`))
	f.Add([]byte("mcpServers:\n  b.c:\n    url: http://127.0.0.1:1/mcp\n    type: http\ntools:\n  deny: [mcp_*]\n"))
	f.Add([]byte(`{"agents":{"list":[{"id":"x","mcp":{"servers":{"s":{"command":"y"}}}}]}}`))
	f.Add([]byte(`{"listen":"127.0.0.1:0","sanitize":{"onSuspicious":"block","maxResultBytes":10}}`))
	// Other clients' shapes (docs/client-configs.md).
	f.Add([]byte(`{"globalShortcut":"Alt+Space","preferences":{},"mcpServers":{"fs":{"command":"npx","args":["-y","x"]}}}`))
	f.Add([]byte("{\n // VS Code\n \"inputs\": [{\"id\": \"k\"}],\n \"servers\": {\"g\": {\"type\": \"http\", \"url\": \"https://h/mcp/\"},},\n}"))
	f.Add([]byte(`{"mcpServers":{"w":{"command":"node","timeout":60,"disabled":true,"autoApprove":[],"alwaysAllow":["t"]},"r":{"transportType":"sse","url":"http://h/sse"}}}`))
	f.Add([]byte(`{"mcpServers":{"f":{"serverUrl":"https://h/mcp","headers":{"K":"${env:K}"}},"u":{"url":"http://h/sse"}}}`))
	f.Add([]byte(`{"mcpServers":{"c":{"command":"x","envFile":".env","env":{"A":"${A:-d}","B":"${input:b}"},"args":["${workspaceFolder}"]}}}`))
	f.Add([]byte(`{"mcpServers": {"x_y": {"command": ""}}, "bogus": 1}`))
	f.Add([]byte(`{"mcpServers":{"s":{"command":"switchboard","args":["serve"]}}}`))
	// Clients that keep their servers among their own settings, TOML
	// included (testdata/fuzz/FuzzParse holds fuller ones).
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 20\n"))
	f.Add([]byte(`{"context_servers":{"a":{"command":{"path":"x","args":["1"]}}}}`))
	f.Add([]byte("extensions:\n  a:\n    type: stdio\n    cmd: x\n    timeout: 3\n"))
	f.Add([]byte("mcpServers:\n  - name: a\n    command: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data)
		if err != nil {
			return
		}
		e1, e2 := c.Validate(), c.Validate()
		if (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
			t.Fatalf("Validate is not deterministic: %v vs %v", e1, e2)
		}
		d := c.Digest()
		if d != c.Digest() {
			t.Fatal("Digest is not deterministic")
		}
		canon, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := config.Parse(canon)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, canon)
		}
		if c2.Digest() != d {
			t.Fatalf("digest changed through the canonical form:\n%s", canon)
		}
	})
}
