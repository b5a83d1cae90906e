package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// appsExtension is the MCP Apps extension a host declares.
const appsExtension = "io.modelcontextprotocol/ui"

// appsClientOptions declare the MCP Apps extension, as a host that renders
// apps does.
func appsClientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Extensions: map[string]any{
		appsExtension: map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}},
	}}}
}

// appServer is one MCP Apps server of the test: how to start it directly,
// and its name behind switchboard.
type appServer struct {
	name string
	argv []string
	env  []string
}

// TestMCPAppsThroughSwitchboard puts the MCP Apps example servers from npm
// (server-basic-react, server-map) and the fixture's apps (a text and a blob page with
// a CSP, permissions and a domain in _meta.ui) behind one switchboard,
// with a client that declares the UI extension. Every UI resource a tool
// names reads through switchboard exactly as directly (contents, bytes,
// MIME type, _meta), each tool's _meta.ui is the server's, the downstream
// initialize declares the extension, the upstreams get the client's
// extension, and a UI resource that holds a configured secret is refused
// with an error naming its server, the secret nowhere in it.
func TestMCPAppsThroughSwitchboard(t *testing.T) {
	dir := npmDir(t)
	node := node22(t)
	react, err := filepath.EvalSymlinks(npmBin(t, "mcp-server-basic-react"))
	if err != nil {
		t.Fatal(err)
	}
	cesium, err := filepath.EvalSymlinks(npmBin(t, "mcp-map-server"))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "app-secret-5f1c0a9e77d2"
	servers := []appServer{
		{name: "react", argv: []string{node, react, "--stdio"}},
		{name: "map", argv: []string{node, cesium, "--stdio"}},
		{name: "fix", argv: []string{fixture, "--name", "fix", "--apps"}},
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"react": map[string]any{"command": node, "args": []string{react, "--stdio"}},
		"map":   map[string]any{"command": node, "args": []string{cesium, "--stdio"}},
		"fix": map[string]any{"command": fixture, "args": []string{"--name", "fix", "--apps", "--app-env", "S_APP"},
			"env": map[string]string{"S_APP": "secret://env/APP_SECRET"}},
	}}
	s := startSwitchboardIn(t, t.TempDir(), dir, cfg, append(npmEnv(t), "APP_SECRET="+secret))
	cs := s.client(t, appsClientOptions())

	ext := cs.InitializeResult().Capabilities.Extensions
	if _, ok := ext[appsExtension]; !ok {
		t.Errorf("initialize declares extensions %v, without %s", ext, appsExtension)
	}
	var tools map[string]*mcp.Tool
	testutil.Eventually(t, 60*time.Second, "the app servers listed", func() bool {
		tools = listTools(t, cs)
		return tools["mcp_react_get-time"] != nil && tools["mcp_map_show-map"] != nil && tools["mcp_fix_show_app"] != nil
	})
	got := unwrap(textOf(mustCall(t, cs, "mcp_fix_client_extensions", map[string]any{})))
	if !strings.Contains(got, appsExtension) || !strings.Contains(got, "text/html;profile=mcp-app") {
		t.Errorf("the upstream saw client extensions %s, without %s for text/html;profile=mcp-app", got, appsExtension)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	read := func(cs *mcp.ClientSession, uri string) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	}
	compared := 0
	for _, srv := range servers {
		direct := connectCommand(t, ctx, srv)
		for _, tool := range listTools(t, direct) {
			uri := appURI(tool.Meta)
			if uri == "" {
				continue
			}
			proxied := tools["mcp_"+srv.name+"_"+tool.Name]
			if proxied == nil {
				t.Errorf("%s: tool %s naming %s is not listed through switchboard", srv.name, tool.Name, uri)
				continue
			}
			if !reflect.DeepEqual(proxied.Meta["ui"], tool.Meta["ui"]) || proxied.Meta["ui/resourceUri"] != tool.Meta["ui/resourceUri"] {
				t.Errorf("%s: tool %s: _meta.ui through switchboard %s, directly %s", srv.name, tool.Name, js(proxied.Meta), js(tool.Meta))
			}
			want, err := read(direct, uri)
			if err != nil {
				t.Fatalf("%s: direct read of %s: %v", srv.name, uri, err)
			}
			res, err := read(cs, appURI(proxied.Meta))
			if err != nil {
				t.Errorf("%s: read of %s through switchboard: %v", srv.name, uri, err)
				continue
			}
			if len(want.Contents) == 0 {
				t.Errorf("%s: %s has no contents", srv.name, uri)
			}
			if !reflect.DeepEqual(res.Contents, want.Contents) {
				t.Errorf("%s: %s through switchboard differs from a direct read:\n%.600s\nwant\n%.600s", srv.name, uri, js(res.Contents), js(want.Contents))
			}
			compared++
		}
	}
	if compared < 4 {
		t.Errorf("compared %d UI resources, want the react and map servers' one each and the fixture's two", compared)
	}

	_, err = read(cs, "ui://fixture/leak.html")
	if err == nil || !strings.Contains(err.Error(), "server 'fix'") || !strings.Contains(err.Error(), "secret") {
		t.Errorf("the leaking UI resource: error %v, want one naming server 'fix' and the secret", err)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the error holds the secret: %v", err)
	}
}

// connectCommand starts srv directly and connects a client that declares
// the UI extension.
func connectCommand(t *testing.T, ctx context.Context, srv appServer) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(srv.argv[0], srv.argv[1:]...)
	cmd.Env = append(os.Environ(), srv.env...)
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-direct", Version: "1"}, appsClientOptions())
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%s: connect directly: %v", srv.name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// appURI is the UI resource a tool names (_meta.ui.resourceUri, or the
// deprecated flat ui/resourceUri).
func appURI(meta mcp.Meta) string {
	if ui, ok := meta["ui"].(map[string]any); ok {
		if uri, _ := ui["resourceUri"].(string); uri != "" {
			return uri
		}
	}
	uri, _ := meta["ui/resourceUri"].(string)
	return uri
}
