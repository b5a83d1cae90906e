package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/discovery"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// Progressive tool discovery (discovery.mode "search"): a view lists only
// switchboard's own two tools, the tools its alwaysVisible globs match and
// those its session found; every visible tool stays callable by name, and
// is found by switchboard_find_tools, whose ranker sees the full
// definitions. What a session found is added to its own tools/list (at
// most maxFound, least recently found out first) and announced with
// list_changed, so a client that refreshes calls them natively.

// switchboard's own tools in search mode.
const (
	FindToolsName = "switchboard_find_tools"
	CallToolName  = "switchboard_call_tool"
)

// Bounds of discovery.
const (
	maxFound         = 64 // tools a session's list keeps beyond the view's own
	defaultFindLimit = 8
	maxFindLimit     = 50
)

// ownTools are switchboard's own tools in search mode, as listed.
var ownTools = []*mcp.Tool{ownTool(discovery.FindToolsDefinition), ownTool(discovery.CallToolDefinition)}

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

// searchView is what a view in search mode keeps besides its routes.
type searchView struct {
	index  *discovery.Index
	routes []*route             // by the index's Doc number
	shown  map[string]*mcp.Tool // every visible tool as a session's list shows it
}

// buildListing sets what the view's tools/list shows: every tool, or in
// search mode its own tools and the alwaysVisible ones; descriptions are
// capped at discovery.maxDescriptionChars, and in search mode, with
// dropSchemaDescriptions, input schemas lose their descriptions (find_tools
// returns them whole).
func (v *view) buildListing(spec *ViewSpec) {
	d := spec.Discovery
	shown := make([]*mcp.Tool, len(v.list))
	for i, r := range v.list {
		shown[i] = listedForm(r.tool, d)
	}
	if !d.Search() {
		v.listed = shown
		return
	}
	sv := &searchView{shown: make(map[string]*mcp.Tool, len(v.list)), routes: v.list}
	docs := make([]discovery.Doc, len(v.list))
	listed := slices.Clone(ownTools)
	for i, r := range v.list {
		docs[i] = docOf(r)
		sv.shown[r.public] = shown[i]
		if spec.AlwaysVisible != nil && spec.AlwaysVisible.AllowsAny(policyNames(r.public, r.entry, r.original)...) {
			listed = append(listed, shown[i])
		}
	}
	slices.SortFunc(listed, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	sv.index = discovery.New(docs)
	v.search, v.listed = sv, listed
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
func docOf(r *route) discovery.Doc {
	d := discovery.Doc{Name: r.public, Server: r.entry.Key, Title: r.tool.Title, Description: r.tool.Description}
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if raw, ok := r.tool.InputSchema.(json.RawMessage); ok && json.Unmarshal(raw, &schema) == nil {
		for _, name := range sortedKeys(schema.Properties) {
			d.Params = append(d.Params, discovery.Param{Name: name, Description: schema.Properties[name].Description})
		}
	}
	return d
}

// foundSet is the tools one session found, least recently found first.
type foundSet struct {
	mu    sync.Mutex
	names []string
}

// add records names as found now and reports whether the set changed.
func (f *foundSet) add(names []string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := false
	for _, n := range names {
		if i := slices.Index(f.names, n); i >= 0 {
			f.names = append(slices.Delete(f.names, i, i+1), n)
			continue
		}
		f.names = append(f.names, n)
		changed = true
		if len(f.names) > maxFound {
			f.names = slices.Delete(f.names, 0, len(f.names)-maxFound)
		}
	}
	return changed
}

func (f *foundSet) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.names)
}

// foundOf is the session's found set (made on first use).
func (p *Proxy) foundOf(ss *session.Session) *foundSet {
	if f, ok := p.found.Load(ss); ok {
		return f.(*foundSet)
	}
	f, _ := p.found.LoadOrStore(ss, &foundSet{})
	return f.(*foundSet)
}

// forgetFound drops what ss found, once ss has closed. Most sessions found
// nothing, and a 2026-07-28 request's session closes with it: a Delete
// locks the map's root even for a missing key, a Load does not. Nothing
// stores for ss between the two: its handlers have returned.
func (p *Proxy) forgetFound(ss *session.Session) {
	if _, ok := p.found.Load(ss); ok {
		p.found.Delete(ss)
	}
}

// sessionListing is what tools/list shows the session in a search view:
// the view's own listing and the tools the session found that the view
// still has, in name order.
func (p *Proxy) sessionListing(v *view, ss *session.Session) []*mcp.Tool {
	f, ok := p.found.Load(ss)
	if !ok {
		return v.listed
	}
	tools := slices.Clone(v.listed)
	for _, name := range f.(*foundSet).list() {
		t := v.search.shown[name]
		if t != nil && !slices.ContainsFunc(tools, func(x *mcp.Tool) bool { return x.Name == name }) {
			tools = append(tools, t)
		}
	}
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools
}

// foundTool is one result of switchboard_find_tools.
type foundTool struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema"`
}

// findTools answers switchboard_find_tools: the best visible tools for the
// query (policy applied before: a hidden tool is not in the index), which
// join the session's list.
func (p *Proxy) findTools(v *view, req *session.Request, args map[string]any) *mcp.CallToolResult {
	query, _ := args["query"].(string)
	if strings.TrimSpace(query) == "" {
		return errorResult(FindToolsName + ": query is required: say in a few words what you want to do")
	}
	limit := defaultFindLimit
	if n, ok := args["limit"].(json.Number); ok {
		if i, err := n.Int64(); err == nil && i >= 1 {
			limit = int(min(i, maxFindLimit))
		}
	}
	server, _ := args["server"].(string)
	hits := v.search.index.Search(query, limit, server)
	found := make([]foundTool, 0, len(hits))
	names := make([]string, 0, len(hits))
	for _, h := range hits {
		r := v.search.routes[h.Doc]
		found = append(found, foundTool{Name: r.public, Server: r.entry.Key, Title: r.tool.Title, Description: r.tool.Description, InputSchema: r.tool.InputSchema})
		names = append(names, r.public)
	}
	if p.foundOf(req.Session).add(names) {
		// Clients that refresh can call them natively now.
		_ = req.Session.Notify(context.Background(), "notifications/tools/list_changed", nil)
	}
	text, _ := json.Marshal(found)
	if len(found) == 0 {
		text = []byte("No tool matched. Try other words, or leave out the server.")
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: map[string]any{"tools": found},
	}
}

// ownToolCall answers a call of one of switchboard's own tools in a search
// view; handled is false for any other name.
func (p *Proxy) ownToolCall(ctx context.Context, v *view, req *session.Request, params *mcp.CallToolParamsRaw) (res *mcp.CallToolResult, handled bool, err error) {
	if v.search == nil || (params.Name != FindToolsName && params.Name != CallToolName) {
		return nil, false, nil
	}
	args, err := decodeArgs(params.Arguments)
	if err != nil {
		return errorResult(fmt.Sprintf("invalid arguments for tool %q: %v", params.Name, err)), true, nil
	}
	if params.Name == FindToolsName {
		return p.findTools(v, req, args), true, nil
	}
	name, _ := args["name"].(string)
	rt, ok := v.tools[name]
	if !ok {
		// Unknown, hidden by policy, or one of switchboard's own.
		p.tel.Load().Denial(ctx)
		return nil, true, unknownTool(name)
	}
	inner, err := json.Marshal(args["arguments"])
	if err != nil || string(inner) == "null" {
		inner = []byte("{}")
	}
	// The one path of every call: policy, limiter, validation, boundary,
	// audit and metrics under the real tool's name.
	res, err = p.forward(ctx, v.id, v.snap, rt, req, &mcp.CallToolParamsRaw{Name: name, Arguments: inner, Meta: params.Meta})
	return res, true, err
}
