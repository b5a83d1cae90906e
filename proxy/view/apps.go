package view

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// appIndex is what a view keeps for MCP Apps: the servers by prefix (a
// public ui:// URI names its server by prefix, router.AppURI), the UI
// resources policy denies, and the tools an app may call by their
// server's own name.
type appIndex struct {
	byPrefix map[string]*ServerEntry
	// allowed and denied are, per server, the ui:// URIs (the server's
	// own) that tools the view's policy lets through, or hides, name.
	allowed, denied map[*ServerEntry]map[string]bool
	// bare are the tools an app may call by their server's own name:
	// those of servers that serve UI resources, callable by an app
	// (AppCallable), by original name.
	bare map[string][]*Route
}

// named notes that a tool of e, allowed by policy or not, names the UI
// resource its _meta names (if any).
func (a *appIndex) named(e *ServerEntry, t *mcp.Tool, allowed bool) {
	uri := AppResourceURI(t.Meta)
	if uri == "" {
		return
	}
	m := &a.denied
	if allowed {
		m = &a.allowed
	}
	if *m == nil {
		*m = map[*ServerEntry]map[string]bool{}
	}
	if (*m)[e] == nil {
		(*m)[e] = map[string]bool{}
	}
	(*m)[e][uri] = true
}

// deniedApp reports whether uri (e's own) is a UI resource that only
// tools hidden by the view's policy name: it is neither listed nor read.
func (a *appIndex) deniedApp(e *ServerEntry, uri string) bool {
	return a.denied[e][uri] && !a.allowed[e][uri]
}

// PublicAppMeta is a tool's (or a result's) _meta with the UI resource it names
// (_meta.ui.resourceUri, the deprecated flat ui/resourceUri) under its
// public URI (router.AppURI); meta itself when it names none.
func PublicAppMeta(meta mcp.Meta, prefix string) mcp.Meta {
	ui, _ := meta["ui"].(map[string]any)
	nested, _ := ui["resourceUri"].(string)
	flat, _ := meta["ui/resourceUri"].(string)
	if !router.IsAppURI(nested) && !router.IsAppURI(flat) {
		return meta
	}
	out := maps.Clone(meta)
	if router.IsAppURI(nested) {
		ui = maps.Clone(ui)
		ui["resourceUri"] = router.AppURI(prefix, nested)
		out["ui"] = ui
	}
	if router.IsAppURI(flat) {
		out["ui/resourceUri"] = router.AppURI(prefix, flat)
	}
	return out
}

// visibility is a tool's _meta.ui.visibility, and whether it has one.
func visibility(meta mcp.Meta) ([]string, bool) {
	ui, _ := meta["ui"].(map[string]any)
	raw, ok := ui["visibility"].([]any)
	if !ok {
		return nil, false
	}
	var out []string
	for _, x := range raw {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out, true
}

// ModelVisible reports whether a tool is for the model: its
// _meta.ui.visibility, when it has one, includes "model" (the default is
// ["model", "app"]). A tool that is not is callable, but not listed.
func ModelVisible(meta mcp.Meta) bool {
	vis, ok := visibility(meta)
	return !ok || slices.Contains(vis, "model")
}

// AppCallable reports whether an app may call a tool: its
// _meta.ui.visibility, when it has one, includes "app".
func AppCallable(meta mcp.Meta) bool {
	vis, ok := visibility(meta)
	return !ok || slices.Contains(vis, "app")
}

// indexAppTools indexes the tools an app may call by their server's own
// name: every published tool that is AppCallable, of a server that
// serves UI resources (servesAppsOf).
func (v *View) indexAppTools() {
	serves := map[*ServerEntry]bool{}
	for _, r := range v.List {
		ok, seen := serves[r.Entry]
		if !seen {
			ok = servesAppsOf(r.Entry)
			serves[r.Entry] = ok
		}
		if !ok || !AppCallable(r.Tool.Meta) {
			continue
		}
		if v.apps.bare == nil {
			v.apps.bare = map[string][]*Route{}
		}
		v.apps.bare[r.Original] = append(v.apps.bare[r.Original], r)
	}
}

// servesAppsOf reports whether server e serves UI resources: a tool of it
// names one, or a resource or template it lists is one.
func servesAppsOf(e *ServerEntry) bool {
	cat := catalogOf(e)
	if cat == nil {
		return false
	}
	for _, t := range cat.Tools {
		if t != nil && AppResourceURI(t.Meta) != "" {
			return true
		}
	}
	for _, r := range cat.Resources {
		if r != nil && sanitize.IsApp(&mcp.ResourceContents{URI: r.URI, MIMEType: r.MIMEType}) {
			return true
		}
	}
	for _, t := range cat.Templates {
		if t != nil && router.IsAppURI(t.URITemplate) {
			return true
		}
	}
	return false
}

// AppTool resolves the name an app calls a tool by — its server's own
// name, which the app's HTML knows, not the public one — to the one tool
// of that name among the view's servers that serve UI resources. It is
// asked only for a name that is no public tool name. A name two such
// servers publish is ambiguous: the error names the candidates. ok is
// false when no such tool is published (unknown, or hidden by policy).
func (v *View) AppTool(name string) (r *Route, ok bool, err error) {
	cands := v.apps.bare[name]
	switch len(cands) {
	case 0:
		return nil, false, nil
	case 1:
		return cands[0], true, nil
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Public + " (server '" + c.Entry.Key + "')"
	}
	return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
		"tool %q is ambiguous: %d servers with MCP Apps publish it, as %s; call it by one of those names", name, len(cands), strings.Join(names, ", "))}
}

// Extensions are the MCP extensions the view's servers serve, to be
// declared downstream (initialize, server/discover): the union of what
// each server the view shows declared, the first server in key order
// giving an extension's settings, and MCP Apps (upstream.AppsExtension)
// also when a server serves a UI resource without declaring it (a tool
// names one in _meta.ui.resourceUri, or a resource is one). Nil when there
// are none.
func (v *View) Extensions() map[string]any {
	entries := make([]*ServerEntry, 0, len(v.shown))
	for e := range v.shown {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Key < entries[j].Key })
	var out map[string]any
	add := func(name string, settings any) {
		if out == nil {
			out = map[string]any{}
		}
		if _, ok := out[name]; !ok {
			out[name] = settings
		}
	}
	for _, e := range entries {
		if e.Handle == nil {
			continue
		}
		if cat := e.Handle.Catalog(); cat != nil {
			for _, name := range sortedNames(cat.Extensions) {
				add(name, cat.Extensions[name])
			}
		}
	}
	if _, ok := out[upstream.AppsExtension]; !ok && v.servesApps() {
		add(upstream.AppsExtension, map[string]any{})
	}
	return out
}

// servesApps reports whether a tool of the view names a UI resource or a
// resource of the view is one.
func (v *View) servesApps() bool {
	for _, r := range v.List {
		if r.Tool != nil && AppResourceURI(r.Tool.Meta) != "" {
			return true
		}
	}
	for uri, r := range v.Resources {
		if r.Resource != nil && sanitize.IsApp(&mcp.ResourceContents{URI: uri, MIMEType: r.Resource.MIMEType}) {
			return true
		}
	}
	return false
}

// AppResourceURI is the UI resource a tool's _meta names:
// _meta.ui.resourceUri, or the deprecated flat "ui/resourceUri" ("" if
// none).
func AppResourceURI(meta mcp.Meta) string {
	if ui, ok := meta["ui"].(map[string]any); ok {
		if uri, ok := ui["resourceUri"].(string); ok && uri != "" {
			return uri
		}
	}
	uri, _ := meta["ui/resourceUri"].(string)
	return uri
}

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for name := range maps.Keys(m) {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
