package view

import (
	"maps"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
)

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
