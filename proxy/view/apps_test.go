package view

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// appsView builds the default view of servers a and b, which serve the
// same UI resources, and c, which serves none; a's tool admin is denied.
func appsView(t *testing.T) *View {
	t.Helper()
	const cfg = `{"mcpServers": {
		"a": {"command": "true", "lazy": true, "tools": {"deny": ["mcp_a_admin"]}},
		"b": {"command": "true", "lazy": true},
		"c": {"command": "true", "lazy": true}}}`
	c, err := config.Load([]byte(cfg), config.Source{Getenv: func(string) string { return "" }})
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	planned, specs := Plan(c)
	ui := func(m map[string]any) mcp.Meta { return mcp.Meta{"ui": m} }
	page := func(uri string) *mcp.Resource {
		return &mcp.Resource{URI: uri, Name: uri, MIMEType: "text/html;profile=mcp-app"}
	}
	cats := map[string]*upstream.Catalog{
		"a": {Tools: []*mcp.Tool{
			{Name: "show", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://w/app.html"}, "ui/resourceUri": "ui://w/app.html"}},
			{Name: "admin", Meta: ui(map[string]any{"resourceUri": "ui://w/admin.html"})},
			{Name: "refresh", Meta: ui(map[string]any{"visibility": []any{"app"}})},
			{Name: "echo"},
		}, Resources: []*mcp.Resource{page("ui://w/app.html"), page("ui://w/admin.html"), {URI: "file:///x", Name: "x"}},
			Templates: []*mcp.ResourceTemplate{{URITemplate: "ui://w/{id}.html", Name: "t"}}},
		"b": {Tools: []*mcp.Tool{{Name: "show", Meta: ui(map[string]any{"resourceUri": "ui://w/app.html"})}},
			Resources: []*mcp.Resource{page("ui://w/app.html")}},
		"c": {Tools: []*mcp.Tool{{Name: "echo"}}},
	}
	handles := map[string]*upstream.Handle{}
	for key, cat := range cats {
		h := upstream.New(specs[key], upstream.Options{Logger: hclog.NewNullLogger()})
		h.Seed(cat, "")
		handles[key] = h
	}
	snap := NewSnapshot(1, c, handles, planned)
	b := &Builder{Log: hclog.NewNullLogger(), Pins: allowAll{}}
	return b.Build(snap, "")
}

type allowAll struct{}

func (allowAll) Check(string, *mcp.Tool, string, string) bool { return true }

// TestAppURIsNamespaced: a ui:// URI is published as ui://<prefix>/<rest>
// in tool definitions (nested and flat), resources/list and templates, so
// two servers' same URI are two; Locate routes a public one (listed or
// not) back to its server's own URI; other URIs stay as they are.
func TestAppURIsNamespaced(t *testing.T) {
	v := appsView(t)
	meta := v.Tools["mcp_a_show"].Tool.Meta
	if got := AppResourceURI(meta); got != "ui://a/w/app.html" || meta["ui/resourceUri"] != "ui://a/w/app.html" {
		t.Errorf("mcp_a_show names %q (flat %v), want ui://a/w/app.html", got, meta["ui/resourceUri"])
	}
	for uri, own := range map[string]string{"ui://a/w/app.html": "ui://w/app.html", "ui://b/w/app.html": "ui://w/app.html", "file:///x": "file:///x"} {
		r := v.Resources[uri]
		if r == nil || r.URI != own || r.Resource.URI != uri {
			t.Errorf("resource %s: %+v, want the server's %s published as %s", uri, r, own, uri)
		}
	}
	if len(v.Templates) != 1 || v.Templates[0].Template.URITemplate != "ui://a/w/{id}.html" {
		t.Errorf("templates %+v, want ui://a/w/{id}.html", v.Templates)
	}
	for uri, want := range map[string]string{
		"ui://a/w/app.html":      "a ui://w/app.html",
		"ui://b/w/app.html":      "b ui://w/app.html",
		"ui://a/w/unlisted.html": "a ui://w/unlisted.html",
		"ui://a/w/7.html":        "a ui://w/7.html",
		"ui://w/app.html":        " ",
		"ui://zz/w/app.html":     " ",
		"file:///x":              "a file:///x",
	} {
		e, own := v.Locate(uri)
		got := " " + own
		if e != nil {
			got = e.Key + got
		}
		if got != want {
			t.Errorf("Locate(%s) = %q, want %q", uri, got, want)
		}
	}
}

// TestDeniedAppWithheld: a UI resource that only a tool denied by policy
// names is neither listed nor located.
func TestDeniedAppWithheld(t *testing.T) {
	v := appsView(t)
	if v.Tools["mcp_a_admin"] != nil {
		t.Fatal("the denied tool is published")
	}
	if r := v.Resources["ui://a/w/admin.html"]; r != nil {
		t.Errorf("the denied tool's page is listed: %+v", r)
	}
	if e, _ := v.Locate("ui://a/w/admin.html"); e != nil {
		t.Errorf("the denied tool's page is located at %s", e.Key)
	}
}

// TestAppOnlyToolsAndAppCalls: a tool for the app only is not listed but
// is published; an app's bare name resolves among the servers that serve
// UI resources only, never to a denied tool, and two candidates are an
// error that names both.
func TestAppOnlyToolsAndAppCalls(t *testing.T) {
	v := appsView(t)
	for _, l := range v.Listed {
		if l.Name == "mcp_a_refresh" {
			t.Error("the tool for the app only is listed")
		}
	}
	if v.Tools["mcp_a_refresh"] == nil {
		t.Error("the tool for the app only is not published")
	}
	for name, want := range map[string]string{"refresh": "mcp_a_refresh", "echo": "mcp_a_echo", "admin": "", "nope": ""} {
		r, ok, err := v.AppTool(name)
		got := ""
		if r != nil {
			got = r.Public
		}
		if err != nil || got != want || ok != (want != "") {
			t.Errorf("AppTool(%s) = %q %v %v, want %q", name, got, ok, err, want)
		}
	}
	_, ok, err := v.AppTool("show")
	if !ok || err == nil || !strings.Contains(err.Error(), "mcp_a_show") || !strings.Contains(err.Error(), "mcp_b_show") || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("AppTool(show) = %v %v, want an ambiguity naming mcp_a_show and mcp_b_show", ok, err)
	}
}
