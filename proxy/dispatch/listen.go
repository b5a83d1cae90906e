package dispatch

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// subscriptions/listen (2026-07-28) replaces the standalone GET stream
// and resources/subscribe: a client opens one long request naming what it
// wants to hear of, switchboard acknowledges what it will send, and every
// list change and resource update of the client's view goes on that
// request's stream until the client closes it.

// subscriptionsListen serves subscriptions/listen. The generation served is held only
// while the acknowledgement is worked out: a listen lasts for hours and
// must not keep a reload's retired servers running. Resource
// subscriptions go to the URIs' owners as resources/subscribe does; a URI
// no server of the view owns is left out of the acknowledgement.
func (d *Dispatcher) subscriptionsListen(ctx context.Context, r *session.Request) (any, error) {
	if !r.Modern() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is part of protocol %s", r.Method, session.Modern)}
	}
	var params mcp.SubscriptionsListenParams
	if err := decodeParams(r, &params); err != nil {
		return nil, err
	}
	want := mcp.NotificationSubscriptions{}
	if params.Notifications != nil {
		want = *params.Notifications
	}
	pr := PrincipalOf(r.Session)
	ss := r.Session
	ack, err := d.acknowledge(ctx, pr.View, ss, want)
	if err != nil {
		return nil, err
	}
	letGo(ctx)
	// A stateless session joins the sessions announcements go to for as
	// long as it listens; a session with a stream of its own (stdio) is
	// among them already.
	if _, known := d.sessions.m.LoadOrStore(ss, recordOf(ss)); !known {
		defer d.sessions.m.Delete(ss)
	}
	admit := func(method string) bool {
		switch method {
		case "notifications/tools/list_changed":
			return ack.ToolsListChanged
		case "notifications/prompts/list_changed":
			return ack.PromptsListChanged
		case "notifications/resources/list_changed":
			return ack.ResourcesListChanged
		case "notifications/resources/updated":
			return true // sent only for the URIs the session subscribed to
		}
		return false // log messages go only with the request that asked
	}
	if err := r.Listen(ctx, &mcp.SubscriptionsAcknowledgedParams{Notifications: ack}, admit); err != nil {
		return nil, err
	}
	d.unsubscribeAll(pr.View, ss)
	return &mcp.SubscriptionsListenResult{}, nil
}

// acknowledge subscribes the session to what it asked for that the view
// has, and returns that.
func (d *Dispatcher) acknowledge(ctx context.Context, viewID string, ss *session.Session, want mcp.NotificationSubscriptions) (mcp.NotificationSubscriptions, error) {
	s := d.serving.acquireFor(ctx)
	defer s.Release()
	v := s.Views[viewID]
	if v == nil {
		return want, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "this view no longer exists"}
	}
	ack := mcp.NotificationSubscriptions{
		ToolsListChanged:     want.ToolsListChanged,
		PromptsListChanged:   want.PromptsListChanged,
		ResourcesListChanged: want.ResourcesListChanged,
	}
	for _, uri := range want.ResourceSubscriptions {
		e, own := v.Locate(uri)
		if e == nil || !ss.Subscribe(uri) {
			continue
		}
		if err := d.peer.subscribe(ctx, e.Handle, own); err != nil {
			ss.Unsubscribe(uri)
			d.log.Warn("resource subscription refused", "upstream", e.Key, "error", err)
			continue
		}
		ack.ResourceSubscriptions = append(ack.ResourceSubscriptions, uri)
	}
	return ack, nil
}

// unsubscribeAll ends the session's resource subscriptions upstream.
func (d *Dispatcher) unsubscribeAll(viewID string, ss *session.Session) {
	v := d.serving.Load().Views[viewID]
	if v == nil {
		return
	}
	for _, uri := range ss.Subscriptions() {
		ss.Unsubscribe(uri)
		if e, own := v.Locate(uri); e != nil {
			_ = d.peer.unsubscribe(context.Background(), e.Handle, own)
		}
	}
}

// offerModern is the rule for offering 2026-07-28 in server/discover: a
// client is offered it unless the view has a per-client server. Such a
// server belongs to one session: its requests outside a call (roots,
// typically at its start) have no 2026-07-28 request to ride on, and a
// call waiting for the client's input outlives the request that started
// it, whose session would end the server. Those clients keep a legacy
// session, where all of it works.
func (d *Dispatcher) offerModern(ss *session.Session, _ *mcp.ClientCapabilities) bool {
	pr := PrincipalOf(ss)
	if vs := d.serving.Load().Snap.Views[pr.View]; vs != nil {
		for _, e := range vs.Servers {
			if e.PerClient {
				return false
			}
		}
	}
	return true
}
