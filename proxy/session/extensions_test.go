package session_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// TestExtensionsDeclared: initialize and server/discover declare the
// extensions Options.Extensions gives at the time, over the fixed
// capabilities, which stay as they were.
func TestExtensionsDeclared(t *testing.T) {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	ext := map[string]any{"io.modelcontextprotocol/ui": map[string]any{}}
	s := newSession(t, session.Options{Capabilities: caps,
		Extensions: func(context.Context, *session.Session, *mcp.ClientCapabilities) map[string]any { return ext }}, nil)
	res := initialize(t, s, "2025-11-25")
	if _, ok := res.Capabilities.Extensions["io.modelcontextprotocol/ui"]; !ok || res.Capabilities.Tools == nil {
		t.Errorf("initialize declares %+v, want tools and the ui extension", res.Capabilities)
	}
	disc := decode[*mcp.DiscoverResult](t, handle(t, s, call(t, 2, "server/discover", nil)))
	if _, ok := disc.Capabilities.Extensions["io.modelcontextprotocol/ui"]; !ok {
		t.Errorf("server/discover declares %+v, without the ui extension", disc.Capabilities)
	}
	if caps.Extensions != nil {
		t.Errorf("the fixed capabilities were changed: %+v", caps.Extensions)
	}
}
