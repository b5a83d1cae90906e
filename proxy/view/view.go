package view

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/sanitize"
)

// View is one downstream View (the default View or an agent's) as one
// generation serves it: the routes its sessions see, built from the
// snapshot and the upstreams' catalogs. It is immutable once published;
// the hot path reads it with one load (Proxy.acquire) and one map lookup.
type View struct {
	ID        string
	Snap      *Snapshot
	Tools     map[string]*Route
	List      []*Route    // sorted by public name, for the tools command and status
	Listed    []*mcp.Tool // the same tools as published, for tools/list
	Prompts   map[string]*PromptRoute
	Resources map[string]*ResourceRoute // by URI
	Templates []*TemplateRoute          // servers in key order
	Hashes    Hashes                    // of the lists as published
	// shown holds the servers the view shows (see showsServer): only
	// their prompts, resources, templates and completions are served.
	shown map[*ServerEntry]bool
	// Search is set in discovery's search mode (listing.go).
	Search *SearchIndex
	// Notes is what building the view found (notices.go).
	Notes viewNotes
	// Hidden are the tools the view's servers list that it does not
	// publish, by public name, with why (the status page).
	Hidden []Hidden
	// apps is what MCP Apps need of the view (apps.go).
	apps appIndex
}

// Hidden is a tool a view does not publish.
type Hidden struct {
	Public   string
	Server   string
	Original string
	Reason   string // "policy", "pin" (a changed definition held) or "trust" (withheld or skipped)
}

// Hashes fingerprint what each list shows a client.
type Hashes struct{ tools, prompts, resources string }

// Route is one public tool.
type Route struct {
	Public   string
	Entry    *ServerEntry
	Original string
	Tool     *mcp.Tool            // as published downstream
	Schema   *jsonschema.Resolved // nil: arguments are not validated
	Output   *jsonschema.Resolved // the published output schema; nil: none
	DefHash  string
	Metrics  *telemetry.CallAttrs
}

// Build computes view id of snap from the upstreams' catalogs as they
// are now.
func (b *Builder) Build(snap *Snapshot, id string) *View {
	spec, ok := snap.Views[id]
	if !ok {
		spec = &Spec{ID: id}
	}
	v := b.buildTools(snap, spec)
	v.ID = id
	b.buildPrompts(snap, spec, v)
	b.buildResources(snap, spec, v)
	v.indexAppTools()
	v.buildListing(spec)
	v.Hashes = v.Fingerprint()
	return v
}

// Fingerprint hashes the published lists.
func (v *View) Fingerprint() Hashes {
	var h Hashes
	t := sha256.New()
	for _, r := range v.List {
		t.Write([]byte(r.Public + "\x00" + r.DefHash + "\x00"))
	}
	h.tools = hex.EncodeToString(t.Sum(nil))
	pr := sha256.New()
	for _, name := range SortedKeys(v.Prompts) {
		pr.Write([]byte(name + "\x00" + v.Prompts[name].defHash + "\x00"))
	}
	h.prompts = hex.EncodeToString(pr.Sum(nil))
	rs := sha256.New()
	for _, uri := range SortedKeys(v.Resources) {
		rs.Write([]byte(uri + "\x00" + v.Resources[uri].defHash + "\x00"))
	}
	for _, t := range v.Templates {
		rs.Write([]byte(t.Template.URITemplate + "\x00" + t.defHash + "\x00"))
	}
	h.resources = hex.EncodeToString(rs.Sum(nil))
	return h
}

// buildTools builds the view's tool routes: public names, policy, pins
// and the trust boundary's cleaning of each definition.
func (b *Builder) buildTools(snap *Snapshot, spec *Spec) *View {
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
	var notes viewNotes
	table := buildNames("tool", items, &notes)
	maxDesc := maxDescriptionChars(snap.Config)
	known := b.secretsKnown() // before any route is built with them
	profile := ""
	if snap.Config.Sanitize != nil {
		profile = snap.Config.Sanitize.SchemaProfile
	}
	st := &View{Snap: snap, Tools: make(map[string]*Route, table.Len()), shown: map[*ServerEntry]bool{}, Notes: notes}
	st.apps.byPrefix = make(map[string]*ServerEntry, len(spec.Servers))
	for _, e := range spec.Servers {
		st.apps.byPrefix[e.Prefix] = e
		if spec.Tools.AllowsAny("mcp_" + e.Prefix + "_") {
			st.shown[e] = true
		}
	}
	for _, en := range table.Entries() {
		s := byItem[en.Target]
		names := policyNames(en.Public, s.entry, s.tool.Name)
		viewOK := spec.Tools.AllowsAny(names...)
		if viewOK {
			// A server with a tool the view's rules let through is
			// shown, though its namespace as a whole is not allowed.
			st.shown[s.entry] = true
		}
		hide := func(why string) {
			st.Hidden = append(st.Hidden, Hidden{Public: en.Public, Server: s.entry.Key, Original: s.tool.Name, Reason: why})
		}
		if !viewOK || !allowsTool(spec, s.entry, s.tool, names) {
			hide("policy")
			st.apps.named(s.entry, s.tool, false)
			continue
		}
		st.apps.named(s.entry, s.tool, true)
		if !b.Pins.Check(s.entry.HandleKey, s.tool, b.tools.hash(s.tool), snap.PinMode) {
			hide("pin")
			continue // a changed definition held back until approved
		}
		block := snap.Sanitize.OnSuspicious == sanitize.ModeBlock
		key := routeKey{public: en.Public, entry: s.entry, maxDesc: maxDesc, profile: profile, block: block, secrets: known}
		r, findings, err := b.tools.route(s.tool, snap.Gen, key, b.newRoute)
		st.Notes.suspicious(s.entry.Key, "tool", s.tool.Name, findings, block && sanitize.Withholds(findings))
		if err != nil {
			if !errors.Is(err, errWithheld) {
				st.Notes.skipped(s.entry.Key, "tool", s.tool.Name, err)
			}
			hide("trust")
			continue
		}
		st.Tools[r.Public] = r
		st.List = append(st.List, r)
	}
	return st
}

// ShowsServer reports whether the view shows server e at all. Views apply
// to every capability of a server (DESIGN §4): a server whose namespace the
// view's global and agent rules hide (no tool of it would pass them, probed
// with the name mcp_<prefix>_) and that has no tool they let through serves
// none of its prompts, resources, resource templates or completions in this
// view either. The server's own rules are about its tools only.
func (v *View) ShowsServer(e *ServerEntry) bool { return v.shown[e] }

// policyNames are the names the rules judge a tool or prompt by (policy on
// identity, DESIGN §12): its public name, and its name before any cleaning,
// collision suffix or shortening — mcp_<prefix>_<original>, and for a server
// without namespace the original name itself. A deny that matches any of
// them hides it, so no rename can make a denied item visible.
func policyNames(public string, e *ServerEntry, original string) []string {
	names := []string{public, "mcp_" + e.Prefix + "_" + original}
	if e.Bare {
		names = append(names, original)
	}
	return names
}

// newRoute prepares tool t as k says: cleaned description, schemas checked
// (AddTool panics on a non-object input schema), argument validator compiled
// once per definition. It returns what the trust boundary found in the
// definition, and with k.block a definition whose findings withhold it
// (sanitize.Withholds: one strong or two weak) is withheld (errWithheld).
func (b *Builder) newRoute(t *mcp.Tool, k routeKey) (*Route, []sanitize.Finding, error) {
	e := k.entry
	// Arguments are validated against the schema the upstream declared;
	// the client sees it as the trust boundary cleaned it.
	in, err := objectSchema(t.InputSchema)
	if err != nil {
		return nil, nil, err
	}
	clean, findings := sanitize.Tool(t, e.Key, sanitize.DefOptions{MaxDescription: k.maxDesc, Redactor: b.Redactor})
	if k.block && sanitize.Withholds(findings) {
		return nil, findings, errWithheld
	}
	if o := e.Annotations[t.Name]; o != nil {
		shown := *clean
		shown.Annotations = publishedAnnotations(clean.Annotations, o)
		clean = &shown
	}
	r, err := b.publishedRoute(k.public, e, t.Name, clean, in, k.profile)
	return r, findings, err
}

// publishedRoute is newRoute's tool as published: clean is the definition
// the trust boundary cleaned, in the input schema the upstream declared.
func (b *Builder) publishedRoute(public string, e *ServerEntry, original string, clean *mcp.Tool, in map[string]any, profile string) (*Route, error) {
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
		Meta:         PublicAppMeta(clean.Meta, e.Prefix),
		Annotations:  clean.Annotations,
		Description:  clean.Description,
		InputSchema:  json.RawMessage(inRaw),
		OutputSchema: outRaw,
		Name:         public,
		Title:        clean.Title,
		Icons:        clean.Icons,
	}
	r := &Route{Public: public, Entry: e, Original: original, Tool: pub, Metrics: telemetry.NewCallAttrs(e.Key, public)}
	r.Schema = b.schemas.resolve(in, b.Log, e.Key, original)
	if out, err := toMap(clean.OutputSchema); err == nil && out != nil {
		r.Output = b.schemas.resolve(out, b.Log, e.Key, original)
	}
	def, err := json.Marshal(pub)
	if err != nil {
		return nil, fmt.Errorf("definition: %w", err)
	}
	sum := sha256.Sum256(def)
	r.DefHash = hex.EncodeToString(sum[:12]) + e.HandleKey
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

func FindingIDs(fs []sanitize.Finding) []string {
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

// buildNames builds the public names of one kind (tools or prompts) and
// notes every collision the router settled.
func buildNames(kind string, items []router.Item, notes *viewNotes) *router.Table {
	table, collisions := router.Build(items)
	for _, c := range collisions {
		notes.collide(kind, c.Public, c.Winner.Server, c.Loser.Server, c.Renamed)
	}
	return table
}

// PageSize is the most tools one tools/list page carries, as the SDK's
// own default.
const PageSize = mcp.DefaultPageSize

// ListTools answers tools/list from the state: pages of listPageSize in
// public-name order, the cursor being the last name of the previous page.
func (v *View) ListTools(params *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	return ListPage(v.Listed, params)
}

// ListPage is one page of tools (sorted by name) for params' cursor.
func ListPage(tools []*mcp.Tool, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	if params != nil && params.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(params.Cursor)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		i := sort.Search(len(tools), func(i int) bool { return tools[i].Name > string(after) })
		tools = tools[i:]
	}
	res := &mcp.ListToolsResult{Cacheable: mcp.Cacheable{CacheScope: "public"}, Tools: tools}
	if len(tools) > PageSize {
		res.Tools = tools[:PageSize:PageSize]
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(res.Tools[PageSize-1].Name))
	}
	if res.Tools == nil {
		res.Tools = []*mcp.Tool{}
	}
	return res, nil
}

// Builder builds views; its schema cache is shared by every view it builds.
type Builder struct {
	Redactor sanitize.Redactor
	Pins     PinChecker
	Log      hclog.Logger
	schemas  schemaCache
	tools    toolMemo
}

// secretCounter is a redactor that tells how many secrets it knows, and
// only ever learns more (secrets.Set).
type secretCounter interface {
	Len() int
}

// secretsKnown is how many secrets the redactor knows, or -1 when it
// cannot tell (then no route is kept from one build to the next).
func (b *Builder) secretsKnown() int {
	if b.Redactor == nil {
		return 0
	}
	if s, ok := b.Redactor.(secretCounter); ok {
		return s.Len()
	}
	return -1
}

// PinChecker decides whether a tool definition may be published: with
// pinTools on, a changed definition is held back until approved. hash is
// t's sanitize.DefinitionHash.
type PinChecker interface {
	Check(server string, t *mcp.Tool, hash, mode string) bool
}
