package upstream

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Peer receives what a server sends outside any call. The proxy implements
// it and routes each message to the right downstream sessions. Methods are
// called on the connection's goroutines and must be safe for concurrent
// use; Notify must not block; Request must return when ctx ends.
type Peer interface {
	// Notify delivers notifications/message written while no call was in
	// flight, and notifications/resources/updated.
	Notify(h *Handle, method string, params json.RawMessage)
	// Request answers a server→client request no call could take:
	// roots/list from a per-client instance (Spec.ClientRoots) or a server
	// of the one client (Options.OneClient), and
	// sampling/createMessage or elicitation/create when no single call is
	// in flight.
	Request(ctx context.Context, h *Handle, method string, params json.RawMessage) (json.RawMessage, error)
}

// hooks connects a client's out-of-call traffic to the Handle: list
// changes re-list the catalog, the rest goes to the Peer; roots/list is
// answered from the spec unless the instance forwards its client's roots.
func (h *Handle) hooks() clientHooks {
	return clientHooks{
		listChanged: h.cat.listChanged,
		stray:       &h.strays,
		notify: func(method string, params json.RawMessage) {
			if h.opt.Peer != nil {
				h.opt.Peer.Notify(h, method, params)
			}
		},
		request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			if method == "roots/list" && !clientRoots(h.sp(), h.opt.OneClient) {
				if h.sp().Roots == nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "switchboard offers this server no roots"}
				}
				return json.Marshal(&mcp.ListRootsResult{Roots: h.sp().Roots})
			}
			if h.opt.Peer == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "switchboard does not answer " + method}
			}
			return h.opt.Peer.Request(ctx, h, method, params)
		},
	}
}

// capabilities are what switchboard advertises to the server: sampling and
// elicitation when a Peer can route them, roots only when the server has
// configured roots or forwards its one client's roots: a server shared by
// several clients must never see one client's roots and use them for
// another. The MCP Apps
// extension is declared as switchboard relays it (RelayedExtensions); a
// 2026-07-28 server gets the caller's own extensions with each request.
func (cn *connector) capabilities() *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{Extensions: RelayedExtensions()}
	if cn.peered {
		caps.Sampling = &mcp.SamplingCapabilities{}
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	}
	if sp := cn.sp(); clientRoots(sp, cn.oneClient) || sp.Roots != nil {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: clientRoots(sp, cn.oneClient)}
	}
	return caps
}

// clientRoots reports whether a server is offered its downstream client's
// roots: a per-client instance's, or with one client (`serve --stdio`)
// every server's that has no roots configured. There is then nobody else
// the roots could leak to.
func clientRoots(sp *Spec, oneClient bool) bool {
	return sp.ClientRoots || oneClient && sp.Roots == nil
}

// Notify sends a notification to the server (roots/list_changed from the
// one client of a per-client instance, or of `serve --stdio`). It does nothing while the server
// is not up.
func (h *Handle) Notify(ctx context.Context, method string, params any) error {
	s := h.sess.load()
	if s == nil || s.cl.isModern() {
		return nil // 2026-07-28 has no notifications from client to server but cancellation
	}
	return s.cl.notify(ctx, method, params)
}

// AppsExtension is the MCP Apps extension (interactive UI resources).
const AppsExtension = "io.modelcontextprotocol/ui"

// TasksExtension is the tasks extension (SEP-2663): a call may answer
// with a task, followed with tasks/get, tasks/update and tasks/cancel.
const TasksExtension = "io.modelcontextprotocol/tasks"

// AppMIMEType is the MIME type of an MCP Apps UI resource.
const AppMIMEType = "text/html;profile=mcp-app"

// RelayedExtensions are the client extensions switchboard declares to a
// server at initialize, on behalf of clients it cannot name there (the
// session is shared): MCP Apps, whose UI resources it relays unchanged to
// the host that renders them.
func RelayedExtensions() map[string]any {
	return map[string]any{AppsExtension: map[string]any{"mimeTypes": []string{AppMIMEType}}}
}

func serverCaps(cl *client) *mcp.ServerCapabilities {
	if ir := cl.initializeResult(); ir != nil {
		return ir.Capabilities
	}
	return nil
}

// LoggingLevel is the level last set with SetLoggingLevel ("": none).
func (h *Handle) LoggingLevel() mcp.LoggingLevel { return h.sess.loggingLevel() }

// SetLoggingLevel sets the upstream's logging level (kept for restarts).
// A server without the logging capability is left alone.
func (h *Handle) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	s := h.sess.setLevel(level)
	if s == nil {
		return nil // applied when the session comes up
	}
	if caps := serverCaps(s.cl); caps == nil || caps.Logging == nil || s.cl.isModern() {
		return nil // a 2026-07-28 server gets the level with each request
	}
	_, err := h.Call(ctx, "logging/setLevel", &mcp.SetLoggingLevelParams{Level: level}, nil)
	return err
}

// Subscribe subscribes to uri upstream (kept for restarts): a 2026-07-28
// server is listened to (watch.go).
func (h *Handle) Subscribe(ctx context.Context, uri string) error {
	if s := h.sess.subscribe(uri); s != nil && s.cl.isModern() {
		err := s.cl.watchResource(ctx, uri)
		if err != nil {
			h.sess.unsubscribe(uri) // not to be opened again on the next session
		}
		return err
	}
	_, err := h.Call(ctx, "resources/subscribe", &mcp.SubscribeParams{URI: uri}, nil)
	return err
}

// Unsubscribe ends a subscription upstream.
func (h *Handle) Unsubscribe(ctx context.Context, uri string) error {
	if s := h.sess.unsubscribe(uri); s != nil && s.cl.isModern() {
		s.cl.unwatchResource(uri)
		return nil
	}
	_, err := h.Call(ctx, "resources/unsubscribe", &mcp.UnsubscribeParams{URI: uri}, nil)
	return err
}
