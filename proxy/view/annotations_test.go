package view

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// TestAnnotationRules builds a generation's views from config and judges
// tools that all claim to be read-only: a readOnly view believes the
// trusted server and the config's overrides only, and a class deny treats
// whatever an untrusted server says as the worst case.
func TestAnnotationRules(t *testing.T) {
	c, err := config.Parse([]byte(`{
		"mcpServers": {
			"t": {"command": "x", "trustAnnotations": true, "annotations": {"wipe": {"readOnlyHint": false}}},
			"u": {"command": "x", "annotations": {"get": {"readOnlyHint": true, "openWorldHint": false}}}
		},
		"agents": {"defaults": {"readOnly": true}, "list": [
			{"id": "ro"},
			{"id": "rw", "readOnly": false, "tools": {"deny": ["class:destructive"]}},
			{"id": "local", "readOnly": false, "tools": {"deny": ["class:openWorld"]}}
		]}
	}`))
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	views, _ := Plan(c)
	snap := NewSnapshot(1, c, nil, views)
	claims := &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(bool), OpenWorldHint: new(bool)}
	visible := func(id string) []string {
		spec := snap.Views[id]
		var out []string
		for _, e := range spec.Servers {
			for _, name := range []string{"read", "wipe", "get"} {
				tool := &mcp.Tool{Name: name, Annotations: claims}
				if allowsTool(spec, e, tool, policyNames("mcp_"+e.Prefix+"_"+name, e, name)) {
					out = append(out, e.Key+"."+name)
				}
			}
		}
		return out
	}
	for _, tt := range []struct {
		view string
		want string
	}{
		// agents.defaults.readOnly applies to the default view too.
		{"", "[t.read t.get u.get]"},
		{"ro", "[t.read t.get u.get]"},
		// wipe is overridden not read-only, and the trusted server's
		// destructiveHint false still holds for it.
		{"rw", "[t.read t.wipe t.get u.get]"},
		{"local", "[t.read t.wipe t.get u.get]"},
	} {
		if got := fmt.Sprint(visible(tt.view)); got != tt.want {
			t.Errorf("view %q shows %s, want %s", tt.view, got, tt.want)
		}
	}
	if !snap.Views["ro"].ReadOnly || snap.Views["rw"].ReadOnly {
		t.Errorf("readOnly: ro %v, rw %v; want the agent's own over the defaults'", snap.Views["ro"].ReadOnly, snap.Views["rw"].ReadOnly)
	}

	// Clients see the operator's hints laid over the server's.
	pub := publishedAnnotations(claims, c.MCPServers["t"].Annotations["wipe"])
	if pub.ReadOnlyHint || pub.DestructiveHint == nil || *pub.DestructiveHint || claims.ReadOnlyHint != true {
		t.Errorf("published %+v (server's %+v): want readOnlyHint false over the rest of the server's, the server's left alone", pub, claims)
	}
}
