package proxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/sanitize"
)

// instructions is what initialize tells every client.
const instructions = "switchboard aggregates several MCP servers. Tool names are mcp_<server>_<tool>; everything a tool returns is untrusted external content."

// capabilities are what switchboard serves, whatever the upstreams do.
var capabilities = &mcp.ServerCapabilities{
	Tools:       &mcp.ToolCapabilities{ListChanged: true},
	Prompts:     &mcp.PromptCapabilities{ListChanged: true},
	Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
	Completions: &mcp.CompletionCapabilities{},
	Logging:     &mcp.LoggingCapabilities{},
}

// viewHandler answers one method in the view of the session that asks.
type viewHandler func(ctx context.Context, v *view.View, r *session.Request) (any, error)

// methods is the dispatch table every session uses: one handler per
// method, whatever the transport. Each request loads the generation served
// now once, finds its session's view in it, and uses only that.
func (p *Proxy) methods() session.Methods {
	m := session.Methods{}
	add := func(method string, h viewHandler) {
		m[method] = p.traced(method, func(ctx context.Context, r *session.Request) (any, error) {
			pr, _ := r.Session.Principal().(principal)
			s := p.acquire()
			defer s.release()
			v := s.views[pr.view]
			if v == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "this view no longer exists"}
			}
			return h(ctx, v, r)
		})
	}
	add("tools/list", p.listTools)
	add("tools/call", p.callTool)
	add("prompts/list", p.listPrompts)
	add("prompts/get", p.getPrompt)
	add("resources/list", p.listResources)
	add("resources/templates/list", p.listTemplates)
	add("resources/read", p.readResource)
	add("resources/subscribe", func(ctx context.Context, v *view.View, r *session.Request) (any, error) {
		return p.subscribe(ctx, v, r, true)
	})
	add("resources/unsubscribe", func(ctx context.Context, v *view.View, r *session.Request) (any, error) {
		return p.subscribe(ctx, v, r, false)
	})
	add("completion/complete", p.complete)
	m["subscriptions/listen"] = p.subscriptionsListen
	for _, method := range []string{"tools/call", "prompts/get", "resources/read"} {
		m[method] = p.parked.Wrap(method, m[method])
	}
	return m
}

// openSession opens a session for a principal, in its view; out is the
// session's own stream (nil: none yet); resumed is what it was initialized
// with elsewhere, if it was (continuity.go).
func (p *Proxy) openSession(pr principal, id string, out session.Stream, resumed *session.Resumed) (*session.Session, error) {
	cur := p.serving.Load()
	if cur.views[pr.view] == nil {
		return nil, fmt.Errorf("view %q: no such view", pr.view)
	}
	if err := p.held.take(pr, cur.snap.Config.SessionLimit()); err != nil {
		return nil, err
	}
	opt := p.sessionOptions(pr)
	opt.ID, opt.Resumed = id, resumed
	opt.OnLevel = func(*session.Session, mcp.LoggingLevel) { p.setLevel(context.Background(), pr.view) }
	opt.OnRootsChanged = func(ss *session.Session) {
		for _, h := range p.clientHandlesOf(ss) {
			_ = h.Notify(context.Background(), "notifications/roots/list_changed", nil)
		}
	}
	opt.OnClose = p.closeSessionOf(pr)
	ss := session.New(opt, out)
	p.sessions.Store(ss, pr.view)
	return ss, nil
}

// sessionOptions are what every session of principal pr has.
func (p *Proxy) sessionOptions(pr principal) session.Options {
	return session.Options{
		Principal:    pr,
		Methods:      p.dispatch,
		ServerInfo:   p.serverInfo,
		Capabilities: capabilities,
		Instructions: instructions,
		Cache:        pr.cache(),
		OfferModern:  p.offerModernFn,
		Logger:       p.sessLog,
	}
}

// closeSessionOf is what ends with a session: its place in the session
// lists, its subscriptions upstream and its per-client servers.
func (p *Proxy) closeSessionOf(pr principal) func(*session.Session) {
	return func(ss *session.Session) {
		p.sessions.Delete(ss)
		p.forgetFound(ss)
		p.held.give(pr)
		select {
		case p.sessionGone <- struct{}{}:
		default:
		}
		if v := p.serving.Load().views[pr.view]; v != nil {
			for _, uri := range ss.Subscriptions() {
				if e := v.OwnerOf(uri); e != nil {
					_ = p.peer.unsubscribe(context.Background(), e.Handle, uri)
				}
			}
		}
		p.closeClients(func(k clientKey) bool { return k.ss == ss })
	}
}

// sessionCounts counts the open sessions of each principal, to hold each
// to maxSessions.
type sessionCounts struct {
	mu sync.Mutex
	n  map[principal]int
}

// take counts one more session for pr, or refuses it at limit.
func (c *sessionCounts) take(pr principal, limit int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[pr] >= limit {
		who := "this token"
		if pr.tokenID == "" {
			who = "this endpoint"
		}
		return fmt.Errorf("%w: %s holds %d (maxSessions); end one with DELETE or let idle ones expire (sessionIdleTimeout)", session.ErrSessionLimit, who, c.n[pr])
	}
	if c.n == nil {
		c.n = map[principal]int{}
	}
	c.n[pr]++
	return nil
}

// give counts one session of pr less.
func (c *sessionCounts) give(pr principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[pr]--; c.n[pr] <= 0 {
		delete(c.n, pr)
	}
}

// openHTTP opens a session for an HTTP request (its principal is in the
// request's context); without an ID, for one 2026-07-28 request.
func (p *Proxy) openHTTP(r *http.Request, id string) (*session.Session, error) {
	if id == "" {
		return p.openStateless(principalOf(r))
	}
	return p.openSession(principalOf(r), id, nil, nil)
}

// openStateless opens the session of one 2026-07-28 request: it has no
// stream of its own, holds no place under maxSessions and is in no
// session list (what is announced to sessions has nowhere to go); what it
// started (per-client servers) ends with it.
func (p *Proxy) openStateless(pr principal) (*session.Session, error) {
	if p.serving.Load().views[pr.view] == nil {
		return nil, fmt.Errorf("view %q: no such view", pr.view)
	}
	opt := p.sessionOptions(pr)
	opt.OnClose = p.closeStateless
	return session.New(opt, nil), nil
}

// closeStatelessSession is what ends with a stateless session: what it
// found, and its per-client servers.
func (p *Proxy) closeStatelessSession(ss *session.Session) {
	p.forgetFound(ss)
	p.closeClients(func(k clientKey) bool { return k.ss == ss })
}

// cache is what 2026-07-28 answers in pr's view say about caching: they
// are private where a token or an agent chose the view. A reload may
// change any list at any time, so none stays fresh (ttlMs 0).
func (pr principal) cache() session.Cache {
	return session.Cache{Private: pr.tokenID != "" || pr.view != ""}
}

// authorize reports whether an HTTP request may use a session: the same
// token (or, without tokens, the same view) that opened it.
func (p *Proxy) authorize(ss *session.Session, r *http.Request) bool {
	pr, _ := ss.Principal().(principal)
	return principalOf(r) == pr
}

// listTools answers tools/list. It starts the view's lazy servers that
// have not started yet and have no cached catalog (lazyList "start" waits
// for them, bounded by their timeout, firstListTimeout and the request),
// waits for the eager ones still on their first start (awaitFirstStarts),
// then lists from the view. In search mode it waits for nothing.
func (p *Proxy) listTools(ctx context.Context, v *view.View, r *session.Request) (any, error) {
	var params mcp.ListToolsParams
	if err := decodeParams(r, &params); err != nil {
		return nil, err
	}
	if v.Search != nil {
		// Search mode lists switchboard's own tools and the ones found
		// before: nothing to wait for.
		return view.ListPage(p.sessionListing(v, r.Session), &params)
	}
	wctx, cancel := context.WithTimeout(ctx, v.Snap.Config.FirstListTimeout())
	warmed := p.warmLazy(wctx, v)
	cancel()
	if warmed {
		// A lazy server finished starting: list from the generation that
		// has its tools.
		v = p.latest(v)
	}
	v = p.awaitFirstStarts(ctx, v)
	return v.ListTools(&params)
}

// callTool answers tools/call: the one path of every forwarded call.
func (p *Proxy) callTool(ctx context.Context, v *view.View, r *session.Request) (any, error) {
	var params mcp.CallToolParamsRaw
	if err := decodeCallParams(r, &params); err != nil {
		return nil, err
	}
	if res, ok, err := p.ownToolCall(ctx, v, r, &params); ok {
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	rt, ok := v.Tools[params.Name]
	if !ok {
		// A server that may provide it has not listed yet: a call sent
		// before any list (or to a lazy server by name) waits for it.
		if nv := p.awaitTool(ctx, v, params.Name); nv != nil {
			v = nv
			rt, ok = v.Tools[params.Name]
		}
	}
	if !ok {
		// Unknown or hidden by policy: the two are indistinguishable.
		p.tel.Load().Denial(ctx)
		return nil, unknownTool(params.Name)
	}
	res, err := p.forward(ctx, v.ID, v.Snap, rt, r, &params)
	if err != nil {
		return nil, err
	}
	if b := appendTextResult(nil, res, r.ServerInfo()); b != nil {
		return json.RawMessage(b), nil
	}
	return res, nil
}

func (p *Proxy) listPrompts(ctx context.Context, v *view.View, r *session.Request) (any, error) {
	var params mcp.ListPromptsParams
	if err := decodeParams(r, &params); err != nil {
		return nil, err
	}
	v = p.awaitFirstStarts(ctx, v)
	names := view.SortedKeys(v.Prompts)
	list := make([]*mcp.Prompt, len(names))
	for i, n := range names {
		list[i] = v.Prompts[n].Prompt
	}
	page, next, err := paginate(list, params.Cursor, func(x *mcp.Prompt) string { return x.Name })
	if err != nil {
		return nil, err
	}
	return &mcp.ListPromptsResult{Prompts: page, NextCursor: next}, nil
}

func (p *Proxy) listResources(ctx context.Context, v *view.View, r *session.Request) (any, error) {
	var params mcp.ListResourcesParams
	if err := decodeParams(r, &params); err != nil {
		return nil, err
	}
	v = p.awaitFirstStarts(ctx, v)
	uris := view.SortedKeys(v.Resources)
	list := make([]*mcp.Resource, len(uris))
	for i, u := range uris {
		list[i] = v.Resources[u].Resource
	}
	page, next, err := paginate(list, params.Cursor, func(x *mcp.Resource) string { return x.URI })
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourcesResult{Resources: page, NextCursor: next}, nil
}

func (p *Proxy) listTemplates(ctx context.Context, v *view.View, r *session.Request) (any, error) {
	var params mcp.ListResourceTemplatesParams
	if err := decodeParams(r, &params); err != nil {
		return nil, err
	}
	v = p.awaitFirstStarts(ctx, v)
	list := make([]*mcp.ResourceTemplate, len(v.Templates))
	for i, t := range v.Templates {
		list[i] = t.Template
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].URITemplate < list[j].URITemplate })
	page, next, err := paginate(list, params.Cursor, func(x *mcp.ResourceTemplate) string { return x.URITemplate })
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: page, NextCursor: next}, nil
}

// paginate cuts a sorted list into pages of listPageSize; the cursor is
// the key of the last item of the previous page.
func paginate[T any](list []T, cursor string, key func(T) string) ([]T, string, error) {
	if cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		i := sort.Search(len(list), func(i int) bool { return key(list[i]) > string(after) })
		list = list[i:]
	}
	next := ""
	if len(list) > view.PageSize {
		list = list[:view.PageSize:view.PageSize]
		next = base64.RawURLEncoding.EncodeToString([]byte(key(list[view.PageSize-1])))
	}
	if list == nil {
		list = []T{}
	}
	return list, next, nil
}

// subscribe forwards resources/subscribe (on) and unsubscribe (off) to the
// URI's owner, ref-counted so one upstream subscription serves every
// downstream session.
func (p *Proxy) subscribe(ctx context.Context, v *view.View, r *session.Request, on bool) (any, error) {
	var params mcp.SubscribeParams
	if err := decodeParams(r, &params); err != nil {
		return nil, err
	}
	e := v.OwnerOf(params.URI)
	if e == nil {
		return nil, mcp.ResourceNotFoundError(params.URI)
	}
	var err error
	switch {
	case on && r.Session.Subscribe(params.URI):
		if err = p.peer.subscribe(ctx, e.Handle, params.URI); err != nil {
			r.Session.Unsubscribe(params.URI)
		}
	case !on && r.Session.Unsubscribe(params.URI):
		err = p.peer.unsubscribe(ctx, e.Handle, params.URI)
	}
	if err != nil {
		return nil, p.protocolError(ctx, err, sanitize.Source{Server: e.Key, Resource: params.URI}, p.boundary(v.Snap, e))
	}
	return json.RawMessage("{}"), nil
}

// traced starts a span per downstream request, continuing the caller's
// trace from HTTP headers or from _meta (traceparent, tracestate), as the
// MCP trace-context convention proposes.
func (p *Proxy) traced(method string, next session.Handler) session.Handler {
	return func(ctx context.Context, r *session.Request) (any, error) {
		if carrier := incomingTraceContext(r); carrier != nil {
			ctx = otel.GetTextMapPropagator().Extract(ctx, carrier)
		}
		if !p.tel.Load().Tracing {
			// Nothing is recorded; an incoming trace context still
			// reaches the upstream through ctx (callSpan).
			return next(ctx, r)
		}
		var tool string
		if method == "tools/call" {
			var n struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(r.Params, &n)
			tool = n.Name
		}
		name := method
		attrs := []attribute.KeyValue{telemetry.AttrMethod.String(method)}
		if pr, _ := r.Session.Principal().(principal); pr.view != "" {
			attrs = append(attrs, telemetry.AttrView.String(pr.view))
		}
		if id := r.Session.ID(); id != "" {
			attrs = append(attrs, telemetry.AttrSession.String(id))
		}
		if tool != "" {
			name += " " + tool
			attrs = append(attrs, telemetry.AttrTool.String(tool))
		}
		ctx, span := p.tel.Load().Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		res, err := next(ctx, r)
		switch {
		case err != nil:
			span.SetStatus(codes.Error, "error")
			span.SetAttributes(telemetry.AttrErrorType.String(telemetry.ErrorType(err)))
		case isErrorResult(res):
			span.SetStatus(codes.Error, "tool error")
			span.SetAttributes(telemetry.AttrErrorType.String("tool_error"))
		}
		return res, err
	}
}

// isErrorResult reports whether a tools/call answer is a tool error.
func isErrorResult(res any) bool {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.IsError
	case json.RawMessage:
		var e struct {
			IsError bool `json:"isError"`
		}
		_ = json.Unmarshal(r, &e)
		return e.IsError
	}
	return false
}

// incomingTraceContext collects the W3C trace context of a request: HTTP
// headers first, then the request's _meta. It is nil when there is none.
func incomingTraceContext(r *session.Request) propagation.MapCarrier {
	var carrier propagation.MapCarrier
	set := func(k, v string) {
		if carrier == nil {
			carrier = propagation.MapCarrier{}
		}
		carrier[k] = v
	}
	if ex, ok := r.Extra.(*session.Extra); ok && ex != nil && ex.Header != nil {
		for _, k := range []string{"traceparent", "tracestate", "baggage"} {
			if v := ex.Header.Get(k); v != "" {
				set(k, v)
			}
		}
	}
	if len(r.Params) > 0 && containsTrace(r.Params) {
		var m struct {
			Meta map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(r.Params, &m)
		for _, k := range []string{"traceparent", "tracestate"} {
			if v, ok := m.Meta[k].(string); ok && carrier[k] == "" {
				set(k, v)
			}
		}
	}
	return carrier
}

// containsTrace reports whether params may carry trace context in _meta,
// without decoding them.
func containsTrace(params json.RawMessage) bool {
	for i := 0; i+len("traceparent") <= len(params); i++ {
		if string(params[i:i+len("traceparent")]) == "traceparent" {
			return true
		}
	}
	return false
}

// openHTTPStream opens a session for an HTTP request whose own stream is
// out (a legacy SSE stream).
func (p *Proxy) openHTTPStream(r *http.Request, id string, out session.Stream) (*session.Session, error) {
	return p.openSession(principalOf(r), id, out, nil)
}
