package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/sanitize"
)

// Progressive tool discovery (discovery.mode "search"): a view lists only
// switchboard's own two tools, the tools its alwaysVisible globs match and
// those its session found; every visible tool stays callable by name, and
// is found by switchboard_find_tools, whose ranker sees the full
// definitions. What a session found is added to its own tools/list (at
// most maxFound, least recently found out first) and announced with
// list_changed, so a client that refreshes calls them natively.

// Bounds of discovery.
const (
	maxFound         = 64 // tools a session's list keeps beyond the view's own
	defaultFindLimit = 8
	maxFindLimit     = 50
	// maxQueryBytes caps find_tools' query: a few words are what it is
	// for, and the ranker's cost grows with the query's distinct words.
	maxQueryBytes = 1024
)

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

// sessionListing is what tools/list shows the session in a search view:
// the view's own listing and the tools the session found that the view
// still has, in name order.
func (d *Dispatcher) sessionListing(v *view.View, ss *session.Session) []*mcp.Tool {
	rec := recordOf(ss)
	if rec == nil {
		return v.Listed
	}
	found := rec.found.list()
	if len(found) == 0 {
		return v.Listed
	}
	tools := slices.Clone(v.Listed)
	for _, name := range found {
		t := v.Search.Shown[name]
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
func (d *Dispatcher) findTools(ctx context.Context, v *view.View, req *session.Request, args map[string]any) *mcp.CallToolResult {
	query, _ := args["query"].(string)
	if strings.TrimSpace(query) == "" {
		return errorResult(view.FindToolsName + ": query is required: say in a few words what you want to do")
	}
	if len(query) > maxQueryBytes {
		return errorResult(fmt.Sprintf("%s: query is %d bytes, over the limit of %d: say in a few words what you want to do", view.FindToolsName, len(query), maxQueryBytes))
	}
	limit := defaultFindLimit
	if n, ok := args["limit"].(json.Number); ok {
		if i, err := n.Int64(); err == nil && i >= 1 {
			limit = int(min(i, maxFindLimit))
		}
	}
	server, _ := args["server"].(string)
	hits := v.Search.Index.Search(query, limit, server)
	found := make([]foundTool, 0, len(hits))
	names := make([]string, 0, len(hits))
	content := make([]mcp.Content, 0, len(hits))
	for _, h := range hits {
		r := v.Search.Routes[h.Doc]
		t, text := d.trust.found(ctx, v, r)
		content = append(content, &mcp.TextContent{Text: text})
		if t != nil {
			found = append(found, *t)
			names = append(names, r.Public)
		}
	}
	if rec := recordOf(req.Session); rec != nil && rec.found.add(names) {
		// Clients that refresh can call them natively now.
		_ = req.Session.Notify(context.Background(), "notifications/tools/list_changed", nil)
	}
	if len(content) == 0 {
		content = []mcp.Content{&mcp.TextContent{Text: "No tool matched. Try other words, or leave out the server."}}
	}
	return &mcp.CallToolResult{Content: content, StructuredContent: map[string]any{"tools": found}}
}

// found is one find_tools hit as its server's content: its
// definition is upstream text, so it passes the trust boundary as the
// server's results do, as text (wrapped as untrusted content when the
// server's text is) and as structured content (scanned, neutralised). In
// block mode a hit with findings is withheld: t is nil and text says why.
func (t *trust) found(ctx context.Context, v *view.View, r *view.Route) (*foundTool, string) {
	ft := foundTool{Name: r.Public, Server: r.Entry.Key, Title: r.Tool.Title, Description: r.Tool.Description, InputSchema: r.Tool.InputSchema}
	raw, err := json.Marshal(ft)
	var structured map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &structured)
	}
	if err != nil {
		return nil, fmt.Sprintf("tool %q: its definition does not encode: %v", r.Public, err)
	}
	src, opts := sanitize.Source{Server: r.Entry.Key, Tool: r.Original}, t.options(v.Snap, r.Entry)
	out, rep, err := sanitize.ToolResult(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}, StructuredContent: structured}, src, opts)
	if err != nil {
		return nil, fmt.Sprintf("tool %q: %v", r.Public, err)
	}
	t.noteFindings(ctx, r.Entry.Key, r.Original, rep)
	var b strings.Builder
	for _, c := range out.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(tc.Text)
		}
	}
	if rep.Blocked {
		return nil, b.String()
	}
	cleaned, _ := json.Marshal(out.StructuredContent)
	if err := json.Unmarshal(cleaned, &ft); err != nil {
		return nil, fmt.Sprintf("tool %q: %v", r.Public, err)
	}
	return &ft, b.String()
}

// ownToolCall answers a call of one of switchboard's own tools in a search
// view; handled is false for any other name.
func (d *Dispatcher) ownToolCall(ctx context.Context, v *view.View, req *session.Request, params *mcp.CallToolParamsRaw) (res *mcp.CallToolResult, handled bool, err error) {
	if v.Search == nil || (params.Name != view.FindToolsName && params.Name != view.CallToolName) {
		return nil, false, nil
	}
	args, err := decodeArgs(params.Arguments)
	if err != nil {
		return errorResult(fmt.Sprintf("invalid arguments for tool %q: %v", params.Name, err)), true, nil
	}
	if params.Name == view.FindToolsName {
		// Charged like any call; call_tool is charged once, by forward.
		if limited := d.serving.overLimit(ctx, v.Snap, v.ID, req.Session, time.Now()); limited != nil {
			return limited, true, nil
		}
		return d.findTools(ctx, v, req, args), true, nil
	}
	name, _ := args["name"].(string)
	rt, ok := v.Tools[name]
	if !ok {
		// Unknown, hidden by policy, or one of switchboard's own.
		d.serving.genOr(ctx).Tel.Denial(ctx)
		return nil, true, unknownTool(name)
	}
	inner, err := json.Marshal(args["arguments"])
	if err != nil || string(inner) == "null" {
		inner = []byte("{}")
	}
	// The one path of every call: policy, limiter, validation, boundary,
	// audit and metrics under the real tool's name.
	res, err = d.forward(ctx, v.ID, v.Snap, rt, req, &mcp.CallToolParamsRaw{Name: name, Arguments: inner, Meta: params.Meta})
	return res, true, err
}
