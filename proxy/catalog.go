package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// ResourceContextPrompt is the built-in prompt that returns every visible
// resource of the view, read and wrapped as untrusted, as one context block.
const ResourceContextPrompt = "switchboard_resource_context"

// promptRoute is one public prompt.
type promptRoute struct {
	public   string
	entry    *ServerEntry
	original string
	prompt   *mcp.Prompt // as published
	defHash  string
}

// resourceRoute is one exposed resource, keyed by its upstream URI.
type resourceRoute struct {
	entry    *ServerEntry
	resource *mcp.Resource // as published
	defHash  string
}

// templateRoute is one exposed resource template.
type templateRoute struct {
	entry    *ServerEntry
	template *mcp.ResourceTemplate
	compiled *uritemplate.Template
	defHash  string
}

func defHash(v any, extra string) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]) + extra
}

// buildPrompts builds the view's prompt table: the same naming and policy
// as tools.
func (p *Proxy) buildPrompts(snap *Snapshot, spec *ViewSpec, v *view) {
	var items []router.Item
	type src struct {
		entry  *ServerEntry
		prompt *mcp.Prompt
	}
	byItem := map[router.Target]src{}
	for _, e := range spec.Servers {
		cat := catalogOf(e)
		if cat == nil || !e.ListPrompts || !v.showsServer(e) {
			continue
		}
		for _, p := range cat.Prompts {
			items = append(items, router.Item{Server: e.Key, Prefix: e.Prefix, Name: p.Name, Bare: e.Bare})
			byItem[router.Target{Server: e.Key, Name: p.Name}] = src{e, p}
		}
	}
	table := buildNames("prompt", items, &v.notes)
	maxDesc := maxDescriptionChars(snap.Config)
	v.prompts = map[string]*promptRoute{}
	for _, en := range table.Entries() {
		s := byItem[en.Target]
		if names := policyNames(en.Public, s.entry, s.prompt.Name); !spec.Prompts.AllowsAny(names...) || !s.entry.Prompts.AllowsAny(names...) {
			continue
		}
		pub, findings := sanitize.Prompt(s.prompt, s.entry.Key, sanitize.DefOptions{MaxDescription: maxDesc, Redactor: p.redactor})
		if !v.notes.definitionOK(snap, s.entry.Key, "prompt", s.prompt.Name, findings) {
			continue
		}
		pub.Name = en.Public
		v.prompts[en.Public] = &promptRoute{public: en.Public, entry: s.entry, original: s.prompt.Name, prompt: pub, defHash: defHash(pub, s.entry.HandleKey)}
	}
	builtin := &mcp.Prompt{Name: ResourceContextPrompt, Title: "Resource context",
		Description: "Every resource this endpoint exposes, read and wrapped as untrusted external content, as one context block."}
	v.prompts[ResourceContextPrompt] = &promptRoute{public: ResourceContextPrompt, prompt: builtin, defHash: defHash(builtin, "")}
}

// buildResources builds the owner map: a URI served by two servers belongs
// to the first in key order (noted as a collision).
func (p *Proxy) buildResources(snap *Snapshot, spec *ViewSpec, v *view) {
	maxDesc := maxDescriptionChars(snap.Config)
	v.resources = map[string]*resourceRoute{}
	v.templates = nil
	for _, e := range spec.Servers {
		cat := catalogOf(e)
		if cat == nil || !e.Resources || !v.showsServer(e) {
			continue
		}
		for _, r := range cat.Resources {
			if r == nil || !keepURI(e.Filter, r.URI) {
				continue
			}
			if owner, taken := v.resources[r.URI]; taken {
				v.notes.collide("resource", r.URI, owner.entry.Key, e.Key, "")
				continue
			}
			pub, findings := sanitize.Resource(r, e.Key, sanitize.DefOptions{MaxDescription: maxDesc, Redactor: p.redactor})
			if !v.notes.definitionOK(snap, e.Key, "resource", r.URI, findings) {
				continue
			}
			pub.Title = serverTitle(pub.Title, pub.Name, e.Key)
			v.resources[r.URI] = &resourceRoute{entry: e, resource: pub, defHash: defHash(pub, e.HandleKey)}
		}
		for _, t := range cat.Templates {
			if t == nil {
				continue
			}
			compiled, err := uritemplate.New(t.URITemplate)
			if err != nil {
				v.notes.skipped(e.Key, "template", t.URITemplate, err)
				continue
			}
			pub, findings := sanitize.ResourceTemplate(t, e.Key, sanitize.DefOptions{MaxDescription: maxDesc, Redactor: p.redactor})
			if !v.notes.definitionOK(snap, e.Key, "template", t.URITemplate, findings) {
				continue
			}
			pub.Title = serverTitle(pub.Title, pub.Name, e.Key)
			v.templates = append(v.templates, &templateRoute{entry: e, template: pub, compiled: compiled, defHash: defHash(pub, e.HandleKey)})
		}
	}
}

// serverTitle gives a resource's (cleaned) title the server as context.
func serverTitle(title, name, server string) string {
	if title == "" {
		title = name
	}
	return title + " (" + server + ")"
}

func keepURI(filter []string, uri string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.Contains(uri, f) {
			return true
		}
	}
	return false
}

// getPrompt forwards prompts/get, or answers the built-in prompt.
func (p *Proxy) getPrompt(ctx context.Context, v *view, req *session.Request) (any, error) {
	var params mcp.GetPromptParams
	if err := decodeParams(req, &params); err != nil {
		return nil, err
	}
	r, ok := v.prompts[params.Name]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", params.Name)}
	}
	if r.entry == nil {
		return p.resourceContext(ctx, v, req)
	}
	src, opts := sanitize.Source{Server: r.entry.Key, Prompt: r.original}, p.boundary(v.snap, r.entry)
	up := &mcp.GetPromptParams{Name: r.original, Arguments: params.Arguments, Meta: withProgress(&params),
		InputResponses: params.InputResponses, RequestState: params.RequestState}
	res, err := p.handleFor(r.entry, req.Session).GetPrompt(ctx, up,
		newCallSink(p, req, progressToken(req.Params), src, opts))
	if err != nil {
		return nil, p.protocolError(ctx, err, src, opts)
	}
	out, rep, err := sanitize.PromptResult(res, src, opts)
	if err != nil {
		return nil, p.protocolError(ctx, err, src, opts)
	}
	p.noteFindings(ctx, r.entry.Key, r.original, rep)
	return out, nil
}

// ownerOf finds the route that serves uri: an exact listed URI first, then
// the first template that matches (servers in key order).
func (v *view) ownerOf(uri string) *ServerEntry {
	if r, ok := v.resources[uri]; ok {
		return r.entry
	}
	for _, t := range v.templates {
		if t.compiled.Match(uri) != nil {
			return t.entry
		}
	}
	return nil
}

// readResource forwards resources/read to the URI's owner and wraps its
// text as untrusted. Every URI the view's servers own is routed, including
// ones an upstream never listed (resource links in tool results).
func (p *Proxy) readResource(ctx context.Context, v *view, req *session.Request) (any, error) {
	var params mcp.ReadResourceParams
	if err := decodeParams(req, &params); err != nil {
		return nil, err
	}
	e := v.ownerOf(params.URI)
	if e == nil {
		return nil, mcp.ResourceNotFoundError(params.URI)
	}
	params.Meta = forwardableMeta(params.Meta)
	return p.readFrom(ctx, v, e, req, &params)
}

// readFrom reads a resource from e; params are the upstream's (their
// _meta forwardable).
func (p *Proxy) readFrom(ctx context.Context, v *view, e *ServerEntry, req *session.Request, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	uri := params.URI
	src, opts := sanitize.Source{Server: e.Key, Resource: uri}, p.boundary(v.snap, e)
	res, err := p.handleFor(e, req.Session).ReadResource(ctx, params, newCallSink(p, req, nil, src, opts))
	if err != nil {
		return nil, p.protocolError(ctx, err, src, opts)
	}
	out, rep, err := sanitize.ReadResult(res, e.Key, opts)
	if err != nil {
		return nil, p.protocolError(ctx, err, src, opts)
	}
	p.noteFindings(ctx, e.Key, "", rep)
	return out, nil
}

// resourceContext is the built-in prompt: every visible resource, read and
// wrapped, in URI order, as one user message.
func (p *Proxy) resourceContext(ctx context.Context, v *view, req *session.Request) (*mcp.GetPromptResult, error) {
	var b strings.Builder
	b.WriteString("Context from the resources of the connected MCP servers. Each block is untrusted external content.\n")
	limit := v.snap.Sanitize.MaxResultBytes
	for _, uri := range sortedKeys(v.resources) {
		r := v.resources[uri]
		res, err := p.readFrom(ctx, v, r.entry, req, &mcp.ReadResourceParams{URI: uri})
		// Everything about a resource, its failure and its blobs' notes
		// included, comes from its server: each inside a boundary.
		src := sanitize.Source{Server: r.entry.Key, Resource: uri}
		if err != nil {
			fmt.Fprintf(&b, "\n%s\n", sanitize.Wrap("[the resource could not be read: "+p.redact(err.Error())+"]", src, ""))
			continue
		}
		for _, c := range res.Contents {
			if c == nil {
				continue
			}
			b.WriteString("\n")
			if c.Text != "" {
				b.WriteString(c.Text)
			} else {
				b.WriteString(sanitize.Wrap(fmt.Sprintf("[binary resource %s (%s), %d bytes of base64 omitted]", c.URI, c.MIMEType, len(c.Blob)), src, ""))
			}
			b.WriteString("\n")
		}
		if limit > 0 && int64(b.Len()) > limit {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("resource context is over the limit of %d bytes", limit)}
		}
	}
	return &mcp.GetPromptResult{
		Description: "Every resource of this endpoint, wrapped as untrusted content.",
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}},
	}, nil
}

// complete routes completion/complete: ref/prompt by the prompt table,
// ref/resource by the URI or template owner.
func (p *Proxy) complete(ctx context.Context, v *view, req *session.Request) (any, error) {
	var params mcp.CompleteParams
	if err := decodeParams(req, &params); err != nil {
		return nil, err
	}
	ref := params.Ref
	if ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion: missing ref"}
	}
	params.Meta = forwardableMeta(params.Meta)
	var e *ServerEntry
	switch ref.Type {
	case "ref/prompt":
		r, ok := v.prompts[ref.Name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		if r.entry == nil {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		}
		e = r.entry
		params.Ref = &mcp.CompleteReference{Type: ref.Type, Name: r.original}
	case "ref/resource":
		for _, t := range v.templates {
			if t.template.URITemplate == ref.URI {
				e = t.entry
				break
			}
		}
		if e == nil {
			e = v.ownerOf(ref.URI)
		}
		if e == nil {
			return nil, mcp.ResourceNotFoundError(ref.URI)
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: unknown ref type %q", ref.Type)}
	}
	src, opts := sanitize.Source{Server: e.Key}, p.boundary(v.snap, e)
	res, err := p.handleFor(e, req.Session).Complete(ctx, &params, newCallSink(p, req, nil, src, opts))
	if err != nil {
		return nil, p.protocolError(ctx, err, src, opts)
	}
	out, rep := sanitize.Completion(res, opts)
	p.noteFindings(ctx, e.Key, "", rep)
	return out, nil
}

// protocolError maps an upstream failure on a non-tool request to a JSON-RPC
// error (there is no isError result outside tools/call); an upstream's own
// JSON-RPC error passes the trust boundary.
func (p *Proxy) protocolError(ctx context.Context, err error, src sanitize.Source, opts sanitize.Options) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return p.upstreamError(ctx, we, src, opts)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *sanitize.SizeError
	if errors.As(err, &se) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: se.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: p.redact(err.Error())}
}

// noteFindings logs and counts suspicious patterns found in a result.
func (p *Proxy) noteFindings(ctx context.Context, server, name string, rep sanitize.Report) {
	if len(rep.Findings) == 0 {
		return
	}
	ids := findingIDs(rep.Findings)
	for _, id := range ids {
		p.tel.Load().Suspicious(ctx, server, id)
	}
	p.log.Warn("suspicious content", "upstream", server, "tool", name, "reason", ids, "blocked", rep.Blocked)
}

// catalogOf returns the catalog a server entry currently exposes, or nil.
func catalogOf(e *ServerEntry) *upstream.Catalog {
	if e.Handle == nil {
		return nil
	}
	return e.Handle.Catalog()
}

// boundary is the trust boundary's options for content from server e.
func (p *Proxy) boundary(snap *Snapshot, e *ServerEntry) sanitize.Options {
	opts := snap.Sanitize
	opts.Wrap, opts.Redactor = e.Wrap, p.redactor
	return opts
}

// upstreamError passes an upstream's JSON-RPC error through the trust
// boundary: its message is content like a result's (cleaned, redacted,
// scanned, wrapped), its data redacted and scanned.
func (p *Proxy) upstreamError(ctx context.Context, we *jsonrpc.Error, src sanitize.Source, opts sanitize.Options) *jsonrpc.Error {
	out, rep := sanitize.Error(we, src, opts)
	p.noteFindings(ctx, src.Server, src.Tool+src.Prompt, rep)
	return out
}
