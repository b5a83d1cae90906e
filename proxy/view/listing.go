package view

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/ranker"
)

// switchboard's own tools in search mode.
const (
	FindToolsName = "switchboard_find_tools"
	CallToolName  = "switchboard_call_tool"
)

// ownTools are switchboard's own tools in search mode, as listed.
var ownTools = []*mcp.Tool{ownTool(ranker.FindToolsDefinition), ownTool(ranker.CallToolDefinition)}

// ownTool decodes one of the definitions, its schema kept pre-encoded as
// every listed tool's is.
func ownTool(def string) *mcp.Tool {
	var d struct {
		Name, Title, Description string
		InputSchema              json.RawMessage
	}
	if err := json.Unmarshal([]byte(def), &d); err != nil {
		panic("proxy: own tool definition: " + err.Error())
	}
	return &mcp.Tool{Name: d.Name, Title: d.Title, Description: d.Description, InputSchema: d.InputSchema}
}

// SearchIndex is what a view in search mode keeps besides its routes.
type SearchIndex struct {
	Index  *ranker.Index
	Routes []*Route             // by the index's Doc number
	Shown  map[string]*mcp.Tool // every visible tool as a session's list shows it
}

// buildListing sets what the view's tools/list shows: every tool, or in
// search mode its own tools and the alwaysVisible ones; descriptions are
// capped at discovery.maxDescriptionChars, and in search mode, with
// dropSchemaDescriptions, input schemas lose their descriptions (find_tools
// returns them whole).
//
// A tool for apps only (_meta.ui.visibility without "model",
// ModelVisible) is neither listed nor found: it stays callable by name.
func (v *View) buildListing(spec *Spec) {
	d := spec.Discovery
	routes := v.List
	if slices.ContainsFunc(routes, func(r *Route) bool { return !ModelVisible(r.Tool.Meta) }) {
		routes = slices.DeleteFunc(slices.Clone(routes), func(r *Route) bool { return !ModelVisible(r.Tool.Meta) })
	}
	shown := make([]*mcp.Tool, len(routes))
	for i, r := range routes {
		shown[i] = listedForm(r.Tool, d)
	}
	if !d.Search() {
		v.Listed = shown
		return
	}
	sv := &SearchIndex{Shown: make(map[string]*mcp.Tool, len(routes)), Routes: routes}
	docs := make([]ranker.Doc, len(routes))
	listed := slices.Clone(ownTools)
	for i, r := range routes {
		docs[i] = docOf(r)
		sv.Shown[r.Public] = shown[i]
		if spec.AlwaysVisible != nil && spec.AlwaysVisible.AllowsAny(policyNames(r.Public, r.Entry, r.Original)...) {
			listed = append(listed, shown[i])
		}
	}
	slices.SortFunc(listed, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	sv.Index = ranker.New(docs)
	v.Search, v.Listed = sv, listed
}

// listedForm is t as a list shows it under d.
func listedForm(t *mcp.Tool, d *config.Discovery) *mcp.Tool {
	if d == nil {
		return t
	}
	limit := 0
	if d.MaxDescriptionChars != nil {
		limit = *d.MaxDescriptionChars
	}
	drop := d.Search() && d.DropSchemaDescriptions
	if (limit <= 0 || utf8.RuneCountInString(t.Description) <= limit) && !drop {
		return t
	}
	cp := *t
	if limit > 0 && utf8.RuneCountInString(t.Description) > limit {
		cp.Description = string([]rune(t.Description)[:limit]) + "…"
	}
	if drop {
		if raw, ok := t.InputSchema.(json.RawMessage); ok {
			var schema any
			if json.Unmarshal(raw, &schema) == nil {
				if b, err := json.Marshal(withoutDescriptions(schema)); err == nil {
					cp.InputSchema = json.RawMessage(b)
				}
			}
		}
	}
	return &cp
}

// withoutDescriptions is a schema without its "description" keywords
// (a property named "description" is kept).
func withoutDescriptions(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			switch k {
			case "description":
				continue
			case "properties", "$defs", "definitions", "patternProperties":
				if m, ok := e.(map[string]any); ok {
					props := make(map[string]any, len(m))
					for name, s := range m {
						props[name] = withoutDescriptions(s)
					}
					out[k] = props
					continue
				}
			}
			out[k] = withoutDescriptions(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutDescriptions(e)
		}
		return out
	}
	return v
}

// docOf is what the ranker reads of a route: its published (cleaned)
// definition, description whole.
func docOf(r *Route) ranker.Doc {
	d := ranker.Doc{Name: r.Public, Server: r.Entry.Key, Title: r.Tool.Title, Description: r.Tool.Description}
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if raw, ok := r.Tool.InputSchema.(json.RawMessage); ok && json.Unmarshal(raw, &schema) == nil {
		for _, name := range SortedKeys(schema.Properties) {
			d.Params = append(d.Params, ranker.Param{Name: name, Description: schema.Properties[name].Description})
		}
	}
	return d
}
