package proxy

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// Interface guard: the proxy is every upstream's Peer.
var _ upstream.Peer = (*peer)(nil)

// peer routes what upstreams send on their own initiative back to the right
// downstream session: progress by proxy-minted tokens, server→client
// requests to the one call in flight on that upstream (refused when the
// route is ambiguous, never left hanging), logs and resource updates to the
// sessions of the views that expose the upstream.
type peer struct {
	p *Proxy

	next     atomic.Uint64
	progress sync.Map // minted token -> *progressRoute
	inflight sync.Map // *upstream.Handle -> *callSet

	subMu sync.Mutex
	subs  map[subKey]int // upstream subscriptions, ref-counted over downstream sessions
}

type subKey struct {
	h   *upstream.Handle
	uri string
}

type progressRoute struct {
	ss    *mcp.ServerSession
	token any // exactly as the downstream client sent it: string or number
	ctx   context.Context
	seen  atomic.Int64 // notifications forwarded so far
}

// progressQuiet is how long a finished call with a progress token waits for
// notifications still in the SDK's queue. The SDK delivers a call's response
// as soon as it is read, but runs notification handlers from a queue, so
// progress sent before the result can otherwise be forwarded after it (and a
// client rejects progress for a finished request).
var progressQuiet = 3 * time.Millisecond

// settle waits until no progress has been forwarded for progressQuiet
// (at most 20 quiet periods).
func (r *progressRoute) settle() {
	for range 20 {
		n := r.seen.Load()
		time.Sleep(progressQuiet)
		if r.seen.Load() == n {
			return
		}
	}
}

// call is one downstream tools/call in flight on an upstream.
type call struct {
	ss  *mcp.ServerSession
	ctx context.Context
}

type callSet struct {
	mu    sync.Mutex
	calls map[*call]struct{}
}

// begin registers a downstream call in flight on h and, when the caller
// asked for progress, mints the token the upstream will see. The returned
// func ends the registration.
func (pr *peer) begin(ctx context.Context, h *upstream.Handle, req *mcp.CallToolRequest, params *mcp.CallToolParams) func() {
	c := &call{ss: req.Session, ctx: ctx}
	v, _ := pr.inflight.LoadOrStore(h, &callSet{calls: map[*call]struct{}{}})
	set := v.(*callSet)
	set.mu.Lock()
	set.calls[c] = struct{}{}
	set.mu.Unlock()
	var minted string
	var route *progressRoute
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		minted = "sb-" + strconv.FormatUint(pr.next.Add(1), 36)
		route = &progressRoute{ss: req.Session, token: tok, ctx: ctx}
		pr.progress.Store(minted, route)
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta["progressToken"] = minted
	}
	return func() {
		set.mu.Lock()
		delete(set.calls, c)
		set.mu.Unlock()
		if route != nil {
			route.settle()
			pr.progress.Delete(minted)
		}
	}
}

// only returns the single call in flight on h, or the count when there is
// not exactly one.
func (pr *peer) only(h *upstream.Handle) (*call, int) {
	v, ok := pr.inflight.Load(h)
	if !ok {
		return nil, 0
	}
	set := v.(*callSet)
	set.mu.Lock()
	defer set.mu.Unlock()
	if len(set.calls) != 1 {
		return nil, len(set.calls)
	}
	for c := range set.calls {
		return c, 1
	}
	return nil, 0
}

// anyCall returns one call in flight on h, or nil.
func (pr *peer) anyCall(h *upstream.Handle) *call {
	v, ok := pr.inflight.Load(h)
	if !ok {
		return nil
	}
	set := v.(*callSet)
	set.mu.Lock()
	defer set.mu.Unlock()
	for c := range set.calls {
		return c
	}
	return nil
}

// Notify implements upstream.Peer.
func (pr *peer) Notify(ctx context.Context, h *upstream.Handle, params any) {
	switch n := params.(type) {
	case *mcp.ProgressNotificationParams:
		tok, _ := n.ProgressToken.(string)
		v, ok := pr.progress.Load(tok)
		if !ok {
			return // late or foreign
		}
		r := v.(*progressRoute)
		_ = r.ss.NotifyProgress(r.ctx, &mcp.ProgressNotificationParams{ProgressToken: r.token, Progress: n.Progress, Total: n.Total, Message: n.Message})
		r.seen.Add(1)
	case *mcp.LoggingMessageParams:
		pr.p.log.Debug("upstream log message", "upstream", h.Name(), "state", string(n.Level))
		msg := *n
		msg.Logger = h.Name()
		if n.Logger != "" {
			msg.Logger += "/" + n.Logger
		}
		msg.Data = redactAny(pr.p, n.Data)
		// During a call, the calling session gets the message on its own
		// request stream; other sessions of the views get it on their
		// standalone stream. Each session filters by its own level.
		if ss := pr.p.sessionOf(h); ss != nil {
			ctx := context.Background()
			if c := pr.anyCall(h); c != nil {
				ctx = c.ctx
			}
			_ = ss.Log(ctx, &msg)
			return
		}
		c, _ := pr.only(h)
		for _, v := range pr.p.viewsExposing(h) {
			for ss := range v.server.Sessions() {
				sctx := context.Background()
				if c != nil && c.ss == ss {
					sctx = c.ctx
				}
				_ = ss.Log(sctx, &msg)
			}
		}
	case *mcp.ResourceUpdatedNotificationParams:
		for _, v := range pr.p.viewsExposing(h) {
			_ = v.server.ResourceUpdated(context.Background(), n)
		}
	}
}

// Request implements upstream.Peer.
func (pr *peer) Request(ctx context.Context, h *upstream.Handle, _ *mcp.ClientSession, method string, params mcp.Params) (mcp.Result, error) {
	c, n := pr.only(h)
	if ss := pr.p.sessionOf(h); ss != nil {
		// A per-client instance belongs to one session: route there, on the
		// request stream of one of its calls when there is one.
		c = pr.anyCall(h)
		if c == nil {
			c = &call{ss: ss, ctx: context.WithoutCancel(ctx)}
		}
	}
	if c == nil || c.ss == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("switchboard cannot route %s from server '%s': %d calls in flight (exactly one is needed; set isolation: per-client)", method, h.Name(), n)}
	}
	caps := clientCaps(c.ss)
	// Bound the downstream request by the upstream's own deadline.
	rctx, cancel := context.WithTimeout(c.ctx, 5*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-rctx.Done():
		}
	}()
	switch p := params.(type) {
	case *mcp.CreateMessageWithToolsParams:
		if caps == nil || caps.Sampling == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the connected client does not support sampling"}
		}
		return c.ss.CreateMessageWithTools(rctx, p)
	case *mcp.ElicitParams:
		if caps == nil || caps.Elicitation == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the connected client does not support elicitation"}
		}
		return c.ss.Elicit(rctx, p)
	case *mcp.ListRootsParams:
		// The roots capability cannot be told apart from its absence in the
		// SDK's types; a client without roots answers method-not-found.
		return c.ss.ListRoots(rctx, p)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "switchboard does not forward " + method}
}

func clientCaps(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if ip := ss.InitializeParams(); ip != nil {
		return ip.Capabilities
	}
	return nil
}

func redactAny(p *Proxy, v any) any {
	if s, ok := v.(string); ok {
		return p.redact(s)
	}
	return v
}

// viewsExposing lists the views whose current spec includes h.
func (p *Proxy) viewsExposing(h *upstream.Handle) []*view {
	snap := p.cur.Load()
	if snap == nil {
		return nil
	}
	views := *p.views.Load()
	var out []*view
	for id, vs := range snap.Views {
		for _, e := range vs.Servers {
			if e.Handle == h {
				if v := views[id]; v != nil {
					out = append(out, v)
				}
				break
			}
		}
	}
	return out
}

// subscribe ref-counts a downstream subscription and subscribes upstream on
// the first one.
func (pr *peer) subscribe(ctx context.Context, h *upstream.Handle, uri string) error {
	pr.subMu.Lock()
	k := subKey{h, uri}
	pr.subs[k]++
	first := pr.subs[k] == 1
	pr.subMu.Unlock()
	if !first {
		return nil
	}
	if err := h.Subscribe(ctx, uri); err != nil {
		pr.subMu.Lock()
		pr.subs[k]--
		if pr.subs[k] <= 0 {
			delete(pr.subs, k)
		}
		pr.subMu.Unlock()
		return err
	}
	return nil
}

// unsubscribe ends the upstream subscription with the last downstream one.
func (pr *peer) unsubscribe(ctx context.Context, h *upstream.Handle, uri string) error {
	pr.subMu.Lock()
	k := subKey{h, uri}
	if pr.subs[k] == 0 {
		pr.subMu.Unlock()
		return nil
	}
	pr.subs[k]--
	last := pr.subs[k] == 0
	if last {
		delete(pr.subs, k)
	}
	pr.subMu.Unlock()
	if last {
		return h.Unsubscribe(ctx, uri)
	}
	return nil
}
