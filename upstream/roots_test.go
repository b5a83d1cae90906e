package upstream

import (
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRootsCapability: switchboard declares roots to a server that has
// roots configured, or is offered its one client's (a per-client instance,
// or any server with one client: serve --stdio), which can change; a
// server shared by several clients is offered none.
func TestRootsCapability(t *testing.T) {
	configured := []*mcp.Root{{URI: "file:///srv"}}
	for _, c := range []struct {
		name      string
		spec      Spec
		oneClient bool
		want      *mcp.RootCapabilities
	}{
		{"shared", Spec{}, false, nil},
		{"configured", Spec{Roots: configured}, false, &mcp.RootCapabilities{}},
		{"per-client", Spec{ClientRoots: true}, false, &mcp.RootCapabilities{ListChanged: true}},
		{"one client", Spec{}, true, &mcp.RootCapabilities{ListChanged: true}},
		{"one client, configured", Spec{Roots: configured}, true, &mcp.RootCapabilities{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sp atomic.Pointer[Spec]
			sp.Store(&c.spec)
			cn := connector{spec: &sp, oneClient: c.oneClient}
			got := cn.capabilities().RootsV2
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Errorf("roots capability %+v, want %+v", got, c.want)
			}
		})
	}
}
