package upstream

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Peer receives what an upstream sends on its own initiative. The proxy
// implements it and routes each message to the right downstream session.
// Methods are called on the SDK's goroutines and must be safe for
// concurrent use; Request must not block past ctx.
type Peer interface {
	// Notify delivers a notification: *mcp.ProgressNotificationParams,
	// *mcp.LoggingMessageParams or *mcp.ResourceUpdatedNotificationParams.
	Notify(ctx context.Context, h *Handle, params any)
	// Request answers a server→client request (method sampling/createMessage,
	// elicitation/create or roots/list) sent on the upstream session cs.
	Request(ctx context.Context, h *Handle, cs *mcp.ClientSession, method string, params mcp.Params) (mcp.Result, error)
}

// peerOptions adds the Peer's handlers to the client options of one
// connection, and advertises the client capabilities they make possible.
func (h *Handle) peerOptions(o *mcp.ClientOptions) {
	p := h.opt.Peer
	if p == nil {
		return
	}
	o.ProgressNotificationHandler = func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) { p.Notify(ctx, h, r.Params) }
	o.LoggingMessageHandler = func(ctx context.Context, r *mcp.LoggingMessageRequest) { p.Notify(ctx, h, r.Params) }
	o.ResourceUpdatedHandler = func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) { p.Notify(ctx, h, r.Params) }
	o.CreateMessageWithToolsHandler = func(ctx context.Context, r *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
		res, err := p.Request(ctx, h, r.Session, "sampling/createMessage", r.Params)
		if err != nil {
			return nil, err
		}
		return res.(*mcp.CreateMessageWithToolsResult), nil
	}
	o.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		res, err := p.Request(ctx, h, r.Session, "elicitation/create", r.Params)
		if err != nil {
			return nil, err
		}
		return res.(*mcp.ElicitResult), nil
	}
	o.Capabilities = &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{},
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
}

// rootsMiddleware answers roots/list through the Peer: the SDK would answer
// from the client's own root list, which is not per downstream session.
func (h *Handle) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "roots/list" && h.opt.Peer != nil {
			cs, _ := req.GetSession().(*mcp.ClientSession)
			params, _ := req.GetParams().(*mcp.ListRootsParams)
			if params == nil {
				params = &mcp.ListRootsParams{}
			}
			return h.opt.Peer.Request(ctx, h, cs, method, params)
		}
		return next(ctx, method, req)
	}
}

// sessionState is what a new session must be told again after a restart:
// the subscribed URIs and the logging level.
type sessionState struct {
	mu    sync.Mutex
	subs  map[string]bool
	level mcp.LoggingLevel
}

// restore re-subscribes and re-sets the logging level on a fresh session.
// Failures are logged; the session is usable either way.
func (h *Handle) restore(ctx context.Context, cs *mcp.ClientSession) {
	h.sstate.mu.Lock()
	level := h.sstate.level
	uris := make([]string, 0, len(h.sstate.subs))
	for u := range h.sstate.subs {
		uris = append(uris, u)
	}
	h.sstate.mu.Unlock()
	caps := serverCaps(cs)
	if level != "" && caps != nil && caps.Logging != nil {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			h.log.Warn("upstream logging level not restored", "error", err)
		}
	}
	for _, u := range uris {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: u}); err != nil {
			h.log.Warn("upstream subscription not restored", "error", err)
		}
	}
}

func serverCaps(cs *mcp.ClientSession) *mcp.ServerCapabilities {
	if ir := cs.InitializeResult(); ir != nil {
		return ir.Capabilities
	}
	return nil
}

// SetLoggingLevel sets the upstream's logging level (kept for restarts).
// A server without the logging capability is left alone.
func (h *Handle) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	h.sstate.mu.Lock()
	h.sstate.level = level
	h.sstate.mu.Unlock()
	s := h.sess.Load()
	if s == nil {
		return nil // applied when the session comes up
	}
	if caps := serverCaps(s.cs); caps == nil || caps.Logging == nil {
		return nil
	}
	_, err := do(h, ctx, h.spec.callTimeout(), func(ctx context.Context, us *session) (struct{}, error) {
		return struct{}{}, us.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
	})
	return err
}

// Subscribe subscribes to uri upstream (kept for restarts).
func (h *Handle) Subscribe(ctx context.Context, uri string) error {
	h.sstate.mu.Lock()
	if h.sstate.subs == nil {
		h.sstate.subs = map[string]bool{}
	}
	h.sstate.subs[uri] = true
	h.sstate.mu.Unlock()
	_, err := do(h, ctx, h.spec.callTimeout(), func(ctx context.Context, us *session) (struct{}, error) {
		return struct{}{}, us.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	return err
}

// Unsubscribe ends a subscription upstream.
func (h *Handle) Unsubscribe(ctx context.Context, uri string) error {
	h.sstate.mu.Lock()
	delete(h.sstate.subs, uri)
	h.sstate.mu.Unlock()
	_, err := do(h, ctx, h.spec.callTimeout(), func(ctx context.Context, us *session) (struct{}, error) {
		return struct{}{}, us.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	return err
}
