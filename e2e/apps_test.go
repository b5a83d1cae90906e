package e2e

import (
	"context"
	"maps"
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
// (server-basic-react, server-map, server-pdf, server-threejs,
// server-system-monitor) and two fixtures with apps (a text and a
// blob page with a CSP, permissions and a domain in _meta.ui, the same
// ui:// URIs in both) behind one switchboard, with a client that declares
// the UI extension, and the fixtures' show_admin_app denied. Every UI
// resource a tool names is published under ui://<server>/…, and reads
// through switchboard exactly as directly (bytes, MIME type, _meta), its
// contents under the public URI; every resourceUri a tool, a tool's
// result (resource link, _meta.ui) or a listed resource names resolves; the downstream initialize declares the
// extension and the upstreams get the client's; a UI resource that holds
// a configured secret is refused with an error naming its server, the
// secret nowhere in it; the denied tool's page is neither listed nor read.
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
	examples := exampleAppServers(t, node)
	const secret = "app-secret-5f1c0a9e77d2"
	servers := []appServer{
		{name: "react", argv: []string{node, react, "--stdio"}},
		{name: "map", argv: []string{node, cesium, "--stdio"}},
		{name: "fix", argv: []string{fixture, "--name", "fix", "--apps"}},
		{name: "fix2", argv: []string{fixture, "--name", "fix2", "--apps"}},
	}
	servers = append(servers, examples...)
	denyAdmin := map[string]any{"deny": []string{"mcp_*_show_admin_app"}}
	audit := filepath.Join(t.TempDir(), "audit.log")
	cfg := map[string]any{"audit": map[string]any{"enabled": true, "file": audit}, "mcpServers": map[string]any{
		"react": map[string]any{"command": node, "args": []string{react, "--stdio"}},
		"map":   map[string]any{"command": node, "args": []string{cesium, "--stdio"}},
		"fix": map[string]any{"command": fixture, "args": []string{"--name", "fix", "--apps", "--app-env", "S_APP"},
			"env": map[string]string{"S_APP": "secret://env/APP_SECRET"}, "tools": denyAdmin},
		"fix2": map[string]any{"command": fixture, "args": []string{"--name", "fix2", "--apps"}, "tools": denyAdmin},
	}}
	addAppServers(cfg, examples)
	s := startSwitchboardIn(t, t.TempDir(), dir, cfg, append(npmEnv(t), "APP_SECRET="+secret))
	cs := s.client(t, appsClientOptions())

	ext := cs.InitializeResult().Capabilities.Extensions
	if _, ok := ext[appsExtension]; !ok {
		t.Errorf("initialize declares extensions %v, without %s", ext, appsExtension)
	}
	var tools map[string]*mcp.Tool
	testutil.Eventually(t, 60*time.Second, "the app servers listed", func() bool {
		tools = listTools(t, cs)
		return tools["mcp_react_get-time"] != nil && tools["mcp_map_show-map"] != nil && tools["mcp_fix_show_app"] != nil && tools["mcp_fix2_show_app"] != nil &&
			tools["mcp_pdf_display_pdf"] != nil && tools["mcp_threejs_show_threejs_scene"] != nil && tools["mcp_monitor_get-system-info"] != nil
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
	compared, bytes, differing := 0, 0, 0
	for _, srv := range servers {
		direct := connectCommand(t, ctx, srv)
		for _, tool := range listTools(t, direct) {
			uri := appURI(tool.Meta)
			if uri == "" {
				continue
			}
			proxied := tools["mcp_"+srv.name+"_"+tool.Name]
			if tool.Name == "show_admin_app" {
				if proxied != nil {
					t.Errorf("%s: the denied tool %s is listed", srv.name, tool.Name)
				}
				continue
			}
			if proxied == nil {
				t.Errorf("%s: tool %s naming %s is not listed through switchboard", srv.name, tool.Name, uri)
				continue
			}
			public := publicAppURI(srv.name, uri)
			if want := publicAppMeta(srv.name, tool.Meta); !reflect.DeepEqual(proxied.Meta, want) {
				t.Errorf("%s: tool %s: _meta through switchboard %s, want %s", srv.name, tool.Name, js(proxied.Meta), js(want))
			}
			want, err := read(direct, uri)
			if err != nil {
				t.Fatalf("%s: direct read of %s: %v", srv.name, uri, err)
			}
			res, err := read(cs, appURI(proxied.Meta))
			if err != nil {
				t.Errorf("%s: read of %s through switchboard: %v", srv.name, public, err)
				continue
			}
			if len(want.Contents) == 0 || len(res.Contents) != len(want.Contents) {
				t.Errorf("%s: %s has %d contents through switchboard, %d directly", srv.name, uri, len(res.Contents), len(want.Contents))
				continue
			}
			for i, c := range res.Contents {
				w := want.Contents[i]
				if c.URI != publicAppURI(srv.name, w.URI) {
					t.Errorf("%s: contents[%d] of %s has URI %s, want %s", srv.name, i, public, c.URI, publicAppURI(srv.name, w.URI))
				}
				back := *c
				back.URI = w.URI
				if !reflect.DeepEqual(&back, w) {
					differing++
					t.Errorf("%s: %s through switchboard differs from a direct read:\n%.600s\nwant\n%.600s", srv.name, uri, js(c), js(w))
				}
				bytes += len(w.Text) + len(w.Blob)
			}
			compared++
		}
	}
	t.Logf("%d UI resources, %d bytes, compared: %d differ", compared, bytes, differing)
	if compared < 9 {
		t.Errorf("compared %d UI resources, want the five example servers' one each and the fixtures' two each", compared)
	}

	// Every resourceUri a published tool names, and every ui:// resource
	// listed, reads through switchboard; the fixtures' same URIs are two.
	uris := map[string]bool{}
	for _, tool := range tools {
		if uri := appURI(tool.Meta); uri != "" {
			uris[uri] = true
		}
	}
	linked := mustCall(t, cs, "mcp_fix_link_app", map[string]any{})
	for _, c := range linked.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			uris[l.URI] = true
			if l.URI != "ui://fix/fixture/app.html" {
				t.Errorf("a result's resource link names %s, want ui://fix/fixture/app.html", l.URI)
			}
		}
	}
	if uri := appURI(linked.Meta); uri != "ui://fix/fixture/app.html" {
		t.Errorf("a result's _meta.ui names %q, want ui://fix/fixture/app.html", uri)
	}
	listed := map[string]bool{}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(r.URI, "ui://") {
			listed[r.URI] = true
			uris[r.URI] = true
		}
	}
	unresolved, refused := 0, 0
	for uri := range uris {
		_, err := read(cs, uri)
		switch {
		case err != nil && uri == "ui://fix/fixture/leak.html":
			refused++ // it holds a configured secret: checked below
		case err != nil:
			unresolved++
			t.Errorf("resourceUri %s does not resolve through switchboard: %v", uri, err)
		}
	}
	t.Logf("%d resourceUris: %d read, %d refused for a configured secret, %d unresolvable", len(uris), len(uris)-refused-unresolved, refused, unresolved)
	for _, uri := range []string{"ui://fix/fixture/app.html", "ui://fix2/fixture/app.html", "ui://react/get-time/mcp-app.html",
		"ui://pdf/pdf-viewer/mcp-app.html", "ui://threejs/threejs/mcp-app.html", "ui://monitor/system-monitor/mcp-app.html"} {
		if !listed[uri] {
			t.Errorf("resources/list lacks %s: %v", uri, listed)
		}
	}
	for _, uri := range []string{"ui://fix/fixture/admin.html", "ui://fix2/fixture/admin.html"} {
		if listed[uri] {
			t.Errorf("resources/list holds %s, whose only tool is denied", uri)
		}
		if _, err := read(cs, uri); err == nil {
			t.Errorf("%s, whose only tool is denied, reads through switchboard", uri)
		}
	}

	_, err = read(cs, "ui://fix/fixture/leak.html")
	if err == nil || !strings.Contains(err.Error(), "server 'fix'") || !strings.Contains(err.Error(), "secret") {
		t.Errorf("the leaking UI resource: error %v, want one naming server 'fix' and the secret", err)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the error holds the secret: %v", err)
	}
}

// TestMCPAppsAppCalls: an app calls its server's tools by their own names
// (get-time, not mcp_react_get-time). Behind switchboard, with the example
// server and two fixtures with apps: every such call is served and
// audited as the tool it resolved to and held to the caller's rate limit,
// a tool for the app only
// (_meta.ui.visibility ["app"]) is not listed yet callable by either
// name, a name two servers publish is refused naming both, and a tool
// denied by policy stays denied by its own name.
func TestMCPAppsAppCalls(t *testing.T) {
	dir := npmDir(t)
	node := node22(t)
	react, err := filepath.EvalSymlinks(npmBin(t, "mcp-server-basic-react"))
	if err != nil {
		t.Fatal(err)
	}
	examples := exampleAppServers(t, node)
	audit := filepath.Join(t.TempDir(), "audit.log")
	cfg := map[string]any{"audit": map[string]any{"enabled": true, "file": audit},
		"limits": map[string]any{"callsPerMinute": 1, "burst": 9},
		"tools":  map[string]any{"deny": []string{"mcp_fix_show_admin_app", "mcp_fix2_*"}},
		"mcpServers": map[string]any{
			"react": map[string]any{"command": node, "args": []string{react, "--stdio"}},
			"fix":   map[string]any{"command": fixture, "args": []string{"--name", "fix", "--apps"}},
			"fix2":  map[string]any{"command": fixture, "args": []string{"--name", "fix2", "--apps"}, "tools": map[string]any{"deny": []string{"echo"}}},
			"plain": map[string]any{"command": fixture, "args": []string{"--name", "plain"}},
		}}
	addAppServers(cfg, examples)
	s := startSwitchboardIn(t, t.TempDir(), dir, cfg, npmEnv(t))
	cs := s.client(t, appsClientOptions())
	var tools map[string]*mcp.Tool
	testutil.Eventually(t, 60*time.Second, "the app servers listed", func() bool {
		tools = listTools(t, cs)
		return tools["mcp_react_get-time"] != nil && tools["mcp_fix_show_app"] != nil && tools["mcp_plain_echo"] != nil &&
			tools["mcp_pdf_list_pdfs"] != nil && tools["mcp_threejs_learn_threejs"] != nil && tools["mcp_monitor_get-system-info"] != nil
	})
	for _, name := range []string{"mcp_fix_app_refresh", "mcp_monitor_poll-system-stats", "mcp_pdf_read_pdf_bytes"} {
		if tools[name] != nil {
			t.Errorf("the tool for the app only is listed: %s", js(tools[name]))
		}
	}

	calls := []struct {
		name string
		args map[string]any
		want string
	}{
		{"get-time", map[string]any{}, "20"},
		{"show_app", map[string]any{}, "shown"},
		{"show_blob_app", map[string]any{}, "shown"},
		{"app_refresh", map[string]any{}, "shown"},
		{"mcp_fix_app_refresh", map[string]any{}, "shown"},
		{"echo", map[string]any{"text": "from the app"}, "from the app"},
		// The example servers' apps: the system monitor's poll (for the
		// app only), the PDF viewer's list and the three.js docs.
		{"poll-system-stats", map[string]any{}, "usedBytes"},
		{"list_pdfs", map[string]any{}, "PDF"},
		{"learn_threejs", map[string]any{}, "Three.js"},
	}
	served := 0
	for _, c := range calls {
		res, err := callTool(t, cs, c.name, c.args)
		if err != nil || res.IsError || !strings.Contains(textOf(res), c.want) {
			t.Errorf("app call %s: %v %s", c.name, err, js(res))
			continue
		}
		served++
	}
	t.Logf("app calls: %d of %d served", served, len(calls))
	// The nine calls took the burst: the caller's rate limit holds the
	// next, by whatever name.
	if res, err := callTool(t, cs, "get-time", map[string]any{}); err != nil || !res.IsError || !strings.Contains(textOf(res), "rate limit exceeded") {
		t.Errorf("a tenth call by bare name: %v %s, want the rate limit", err, js(res))
	}

	// Denied: the fixture's show_admin_app by any name, every tool of
	// fix2, and echo of the server without apps by its bare name (an app
	// reaches the servers that serve apps only).
	for _, name := range []string{"show_admin_app", "mcp_fix_show_admin_app", "mcp_fix2_show_app", "client_extensions_x"} {
		_, err := callTool(t, cs, name, map[string]any{})
		if err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("denied or unknown %s: error %v, want unknown tool", name, err)
		}
	}

	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"called_as":"get-time","duration_ms"`) || !strings.Contains(string(b), `"outcome":"rate_limited"`) {
		t.Errorf("the audit log lacks the rate-limited call by bare name:\n%s", b)
	}
	for _, want := range []string{`"tool":"mcp_react_get-time","server":"react","original":"get-time","called_as":"get-time"`,
		`"tool":"mcp_fix_app_refresh","server":"fix","original":"app_refresh","called_as":"app_refresh"`,
		`"tool":"mcp_monitor_poll-system-stats","server":"monitor","original":"poll-system-stats","called_as":"poll-system-stats"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the audit log lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), `"original":"show_admin_app"`) || strings.Contains(string(b), `"server":"fix2"`) {
		t.Errorf("a denied tool ran: %s", b)
	}
}

// TestMCPAppsAmbiguousAppCall: two servers with apps both publish
// show_app; an app call by that name is refused with an error that names
// both candidates, and each stays callable by its public name.
func TestMCPAppsAmbiguousAppCall(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{
		"fix":  map[string]any{"command": fixture, "args": []string{"--name", "fix", "--apps"}},
		"fix2": map[string]any{"command": fixture, "args": []string{"--name", "fix2", "--apps"}},
	}}
	s := startSwitchboard(t, cfg)
	cs := s.client(t, appsClientOptions())
	testutil.Eventually(t, 30*time.Second, "the fixtures listed", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_fix_show_app"] != nil && tools["mcp_fix2_show_app"] != nil
	})
	_, err := callTool(t, cs, "show_app", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), "mcp_fix_show_app") || !strings.Contains(err.Error(), "mcp_fix2_show_app") {
		t.Errorf("ambiguous app call: error %v, want one naming mcp_fix_show_app and mcp_fix2_show_app", err)
	}
	for _, name := range []string{"mcp_fix_show_app", "mcp_fix2_show_app"} {
		if res := mustCall(t, cs, name, map[string]any{}); res.IsError {
			t.Errorf("%s: %s", name, js(res))
		}
	}
}

// publicAppURI is the URI switchboard publishes a server's ui:// URI
// under: ui://<server>/<rest>.
func publicAppURI(server, uri string) string {
	rest, ok := strings.CutPrefix(uri, "ui://")
	if !ok {
		return uri
	}
	return "ui://" + server + "/" + rest
}

// publicAppMeta is a tool's _meta as switchboard publishes it: the UI
// resource it names (nested and flat) under its public URI.
func publicAppMeta(server string, meta mcp.Meta) mcp.Meta {
	out := maps.Clone(meta)
	if ui, ok := meta["ui"].(map[string]any); ok {
		if uri, ok := ui["resourceUri"].(string); ok {
			ui = maps.Clone(ui)
			ui["resourceUri"] = publicAppURI(server, uri)
			out["ui"] = ui
		}
	}
	if uri, ok := meta["ui/resourceUri"].(string); ok {
		out["ui/resourceUri"] = publicAppURI(server, uri)
	}
	return out
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

// exampleAppServers are the MCP Apps example servers from npm beyond
// server-basic-react and server-map, each serving its app over --stdio
// offline: the PDF viewer, the three.js scene and the system monitor.
func exampleAppServers(t *testing.T, node string) []appServer {
	t.Helper()
	var out []appServer
	for _, ex := range []struct{ name, bin string }{
		{"pdf", "mcp-pdf-server"}, {"threejs", "mcp-threejs-server"}, {"monitor", "mcp-system-monitor-server"},
	} {
		path, err := filepath.EvalSymlinks(npmBin(t, ex.bin))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, appServer{name: ex.name, argv: []string{node, path, "--stdio"}})
	}
	return out
}

// addAppServers adds servers to cfg's mcpServers as stdio commands.
func addAppServers(cfg map[string]any, servers []appServer) {
	m := cfg["mcpServers"].(map[string]any)
	for _, s := range servers {
		m[s.name] = map[string]any{"command": s.argv[0], "args": s.argv[1:]}
	}
}
