package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/sanitize"
)

// view is one downstream view (the default view or an agent's): the routes
// its sessions see, and its sessions. It lives as long as its view exists,
// across reloads; a rebuild publishes a new state and tells the sessions
// of every list that changed.
type view struct {
	id    string
	p     *Proxy
	state atomic.Pointer[viewState]

	mu     sync.Mutex // serialises rebuilds
	hashes listHashes // of the lists as last published

	sessions sync.Map // *session.Session -> struct{}
}

// listHashes fingerprint what each list shows a client.
type listHashes struct{ tools, prompts, resources string }

// viewState is what the hot path reads: one load, one map lookup.
type viewState struct {
	snap      *Snapshot
	tools     map[string]*route
	list      []*route    // sorted by public name, for the tools command and status
	listed    []*mcp.Tool // the same tools as published, for tools/list
	prompts   map[string]*promptRoute
	resources map[string]*resourceRoute // by URI
	templates []*templateRoute          // servers in key order
}

// route is one public tool.
type route struct {
	public   string
	entry    *ServerEntry
	original string
	tool     *mcp.Tool            // as published downstream
	schema   *jsonschema.Resolved // nil: arguments are not validated
	defHash  string
	metrics  *telemetry.CallAttrs
}

func newView(p *Proxy, id string) *view {
	v := &view{id: id, p: p}
	v.state.Store(&viewState{tools: map[string]*route{}, prompts: map[string]*promptRoute{}, resources: map[string]*resourceRoute{}})
	return v
}

// rebuild recomputes the view's routes from the current snapshot and the
// upstreams' catalogs and publishes them at once; then every session of
// the view hears of each list that changed.
func (v *view) rebuild() {
	v.mu.Lock()
	defer v.mu.Unlock()
	snap := v.p.cur.Load()
	if snap == nil {
		return
	}
	spec, ok := snap.Views[v.id]
	if !ok {
		spec = &ViewSpec{ID: v.id}
	}
	next := v.compute(snap, spec)
	v.computePrompts(snap, spec, next)
	v.computeResources(snap, spec, next)
	next.listed = make([]*mcp.Tool, len(next.list))
	for i, r := range next.list {
		next.listed[i] = r.tool
	}
	v.state.Store(next)
	h := next.hashes()
	old := v.hashes
	v.hashes = h
	var changed []string
	if h.tools != old.tools {
		changed = append(changed, "notifications/tools/list_changed")
	}
	if h.prompts != old.prompts {
		changed = append(changed, "notifications/prompts/list_changed")
	}
	if h.resources != old.resources {
		changed = append(changed, "notifications/resources/list_changed")
	}
	if len(changed) > 0 {
		v.notifyAll(changed...)
	}
}

// notifyAll sends each method, without params, to every initialized
// session of the view, on its own stream.
func (v *view) notifyAll(methods ...string) {
	v.sessions.Range(func(k, _ any) bool {
		ss := k.(*session.Session)
		if !ss.Initialized() {
			return true
		}
		for _, m := range methods {
			_ = ss.Notify(context.Background(), m, nil)
		}
		return true
	})
}

// sessionCount counts the view's sessions.
func (v *view) sessionCount() int {
	n := 0
	v.sessions.Range(func(any, any) bool { n++; return true })
	return n
}

// hashes fingerprints the published lists.
func (st *viewState) hashes() listHashes {
	var h listHashes
	t := sha256.New()
	for _, r := range st.list {
		t.Write([]byte(r.public + "\x00" + r.defHash + "\x00"))
	}
	h.tools = hex.EncodeToString(t.Sum(nil))
	pr := sha256.New()
	for _, name := range sortedKeys(st.prompts) {
		pr.Write([]byte(name + "\x00" + st.prompts[name].defHash + "\x00"))
	}
	h.prompts = hex.EncodeToString(pr.Sum(nil))
	rs := sha256.New()
	for _, uri := range sortedKeys(st.resources) {
		rs.Write([]byte(uri + "\x00" + st.resources[uri].defHash + "\x00"))
	}
	for _, t := range st.templates {
		rs.Write([]byte(t.template.URITemplate + "\x00" + t.defHash + "\x00"))
	}
	h.resources = hex.EncodeToString(rs.Sum(nil))
	return h
}

// compute builds the view state for snap.
func (v *view) compute(snap *Snapshot, spec *ViewSpec) *viewState {
	type src struct {
		entry *ServerEntry
		tool  *mcp.Tool
	}
	var items []router.Item
	byItem := map[router.Target]src{}
	for _, e := range spec.Servers {
		if e.Handle == nil {
			continue
		}
		cat := e.Handle.Catalog()
		if cat == nil {
			continue
		}
		for _, t := range cat.Tools {
			items = append(items, router.Item{Server: e.Key, Prefix: e.Prefix, Name: t.Name, Bare: e.Bare})
			byItem[router.Target{Server: e.Key, Name: t.Name}] = src{e, t}
		}
	}
	table := v.buildNames("tool", items)
	maxDesc := maxDescriptionChars(snap.Config)
	profile := ""
	if snap.Config.Sanitize != nil {
		profile = snap.Config.Sanitize.SchemaProfile
	}
	st := &viewState{snap: snap, tools: make(map[string]*route, table.Len())}
	for _, en := range table.Entries() {
		s := byItem[en.Target]
		if !spec.Tools.Allows(en.Public) || !s.entry.Tools.Allows(en.Public) {
			continue
		}
		if !v.p.pins.check(s.entry.HandleKey, s.tool, snap.PinMode) {
			continue // a changed definition held back until approved
		}
		r, err := v.p.newRoute(en.Public, s.entry, s.tool, maxDesc, profile, snap.Sanitize.OnSuspicious)
		if err != nil {
			v.p.log.Warn("tool skipped", "upstream", s.entry.Key, "tool", s.tool.Name, "error", err)
			continue
		}
		st.tools[r.public] = r
		st.list = append(st.list, r)
	}
	return st
}

// newRoute prepares one public tool: cleaned description, schemas checked
// (AddTool panics on a non-object input schema), argument validator compiled
// once per definition.
func (p *Proxy) newRoute(public string, e *ServerEntry, t *mcp.Tool, maxDesc int, profile string, mode sanitize.Mode) (*route, error) {
	// Arguments are validated against the schema the upstream declared;
	// the client sees it as the trust boundary cleaned it.
	in, err := objectSchema(t.InputSchema)
	if err != nil {
		return nil, err
	}
	clean, findings := sanitize.Tool(t, e.Key, sanitize.DefOptions{MaxDescription: maxDesc, Redactor: p.redactor})
	if len(findings) > 0 {
		ids := findingIDs(findings)
		p.log.Warn("suspicious definition", "upstream", e.Key, "tool", t.Name, "reason", ids, "blocked", mode == sanitize.ModeBlock)
		if mode == sanitize.ModeBlock {
			return nil, fmt.Errorf("definition withheld: it matched suspicious patterns (%s)", strings.Join(ids, ", "))
		}
	}
	shown, err := objectSchema(clean.InputSchema)
	if err != nil {
		return nil, err
	}
	published := any(shown)
	if profile == "strict-llm" {
		strict, err := sanitize.StrictLLMSchema(shown)
		if err != nil {
			return nil, fmt.Errorf("strict-llm schema: %w", err)
		}
		published = strict
	}
	// Schemas are published pre-encoded: every tools/list re-encodes every
	// tool, and a decoded schema map costs a sorted-map encoding each time.
	inRaw, err := json.Marshal(published)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var outRaw any
	if clean.OutputSchema != nil {
		b, err := json.Marshal(clean.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		outRaw = json.RawMessage(b)
	}
	pub := &mcp.Tool{
		Meta:         clean.Meta,
		Annotations:  clean.Annotations,
		Description:  clean.Description,
		InputSchema:  json.RawMessage(inRaw),
		OutputSchema: outRaw,
		Name:         public,
		Title:        clean.Title,
		Icons:        clean.Icons,
	}
	r := &route{public: public, entry: e, original: t.Name, tool: pub, metrics: telemetry.NewCallAttrs(e.Key, public)}
	r.schema = p.schemas.resolve(in, p.log, e.Key, t.Name)
	def, err := json.Marshal(pub)
	if err != nil {
		return nil, fmt.Errorf("definition: %w", err)
	}
	sum := sha256.Sum256(def)
	r.defHash = hex.EncodeToString(sum[:12]) + e.HandleKey
	return r, nil
}

// objectSchema is a tool's input schema as an object schema: none is an
// empty object, and one that forgot its type but has properties is taken
// as an object. AddTool-style consumers need type "object".
func objectSchema(schema any) (map[string]any, error) {
	in, err := toMap(schema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if in == nil {
		return map[string]any{"type": "object"}, nil
	}
	switch typ := in["type"]; typ {
	case "object":
	case nil:
		if _, hasProps := in["properties"]; !hasProps {
			return nil, fmt.Errorf("input schema has no type")
		}
		// Plainly an object schema that forgot its type.
		in = cloneMap(in)
		in["type"] = "object"
	default:
		return nil, fmt.Errorf("input schema type is %v, not object", typ)
	}
	return in, nil
}

func findingIDs(fs []sanitize.Finding) []string {
	ids := make([]string, 0, len(fs))
	seen := map[string]bool{}
	for _, f := range fs {
		if !seen[f.ID] {
			seen[f.ID] = true
			ids = append(ids, f.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

func toMap(schema any) (map[string]any, error) {
	switch s := schema.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return s, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// schemaCache compiles each distinct input schema once; definitions repeat
// across rebuilds and views.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*jsonschema.Resolved // by canonical JSON; nil value: did not compile
}

func (c *schemaCache) resolve(schema map[string]any, log hclog.Logger, server, tool string) *jsonschema.Resolved {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	key := string(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.m[key]; ok {
		return r
	}
	if c.m == nil {
		c.m = map[string]*jsonschema.Resolved{}
	}
	var s jsonschema.Schema
	dec := json.NewDecoder(bytes.NewReader(b))
	var r *jsonschema.Resolved
	if err = dec.Decode(&s); err == nil {
		r, err = s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	}
	if err != nil {
		log.Warn("argument validation off for tool", "upstream", server, "tool", tool, "error", err)
		r = nil
	}
	c.m[key] = r
	return r
}

// setLevel gives every upstream of the view the most verbose level any of
// its sessions asked for; each session still gets only what its own level
// lets through.
func (v *view) setLevel(ctx context.Context) {
	var min mcp.LoggingLevel
	v.sessions.Range(func(k, _ any) bool {
		if l := k.(*session.Session).LogLevel(); l != "" && (min == "" || session.LevelRank(l) < session.LevelRank(min)) {
			min = l
		}
		return true
	})
	if min == "" {
		return
	}
	vs, ok := v.state.Load().snap.Views[v.id]
	if !ok {
		return
	}
	var wg sync.WaitGroup
	for _, e := range vs.Servers {
		if e.Handle == nil {
			continue
		}
		wg.Go(func() {
			if err := e.Handle.SetLoggingLevel(ctx, min); err != nil {
				v.p.log.Debug("upstream logging level", "upstream", e.Key, "error", err)
			}
		})
	}
	wg.Wait()
}

// buildNames builds the public names of one kind (tools or prompts) and logs
// every collision the router settled.
func (v *view) buildNames(kind string, items []router.Item) *router.Table {
	table, collisions := router.Build(items)
	for _, c := range collisions {
		v.p.log.Warn("name collision", "reason", kind, "tool", c.Public, "upstream", c.Loser.Server, "renamed", c.Renamed, "winner", c.Winner.Server)
	}
	return table
}

// listPageSize is the most tools one tools/list page carries, as the SDK's
// own default.
const listPageSize = mcp.DefaultPageSize

// listTools answers tools/list from the state: pages of listPageSize in
// public-name order, the cursor being the last name of the previous page.
func (st *viewState) listTools(params *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	tools := st.listed
	if params != nil && params.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(params.Cursor)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		i := sort.Search(len(tools), func(i int) bool { return tools[i].Name > string(after) })
		tools = tools[i:]
	}
	res := &mcp.ListToolsResult{Cacheable: mcp.Cacheable{CacheScope: "public"}, Tools: tools}
	if len(tools) > listPageSize {
		res.Tools = tools[:listPageSize:listPageSize]
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(res.Tools[listPageSize-1].Name))
	}
	if res.Tools == nil {
		res.Tools = []*mcp.Tool{}
	}
	return res, nil
}
