package dispatch

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// With one client (`serve --stdio`) there is nobody a shared server's
// requests outside a call could leak to: its roots/list goes to that
// client, as if the server were connected to it directly, and the client's
// roots/list_changed goes to every server of its view.

// soleSession is the one session whose view exposes h, for a request h
// makes outside a call; an error while there is none, or while its client
// has not initialized: the server is told of the client's roots once it
// has (initialized).
func (pr *peer) soleSession(h *upstream.Handle, method string) (*session.Session, error) {
	var sole *session.Session
	n := 0
	pr.eachSessionExposing(h, func(ss *session.Session, _ *view.ServerEntry) {
		sole = ss
		n++
	})
	if n == 1 && sole.Initialized() {
		return sole, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("switchboard cannot route %s from server '%s' outside a call yet: its client has not initialized (notifications/roots/list_changed follows once it has; a 2026-07-28 client opens no session, and is asked only within its calls)", method, h.Name())}
}

// rootsChanged relays the one client's notifications/roots/list_changed to
// the shared servers of its view (per-client instances get theirs from the
// session's record). Only with one client: shared servers are never
// offered a client's roots otherwise.
func (pr *peer) rootsChanged(viewID string) {
	if !pr.oneClient {
		return
	}
	snap := pr.serving.Load().Snap
	if snap == nil || snap.Views[viewID] == nil {
		return
	}
	for _, e := range snap.Views[viewID].Servers {
		if e.Handle != nil && !e.PerClient {
			_ = e.Handle.Notify(context.Background(), "notifications/roots/list_changed", nil)
		}
	}
}

// initialized is the session's OnInitialized with one client: a server
// that asked for roots before the client initialized was refused, and is
// told to ask again (nil: several clients, nothing to do).
func (pr *peer) initialized(viewID string) func(*session.Session) {
	if !pr.oneClient {
		return nil
	}
	return func(ss *session.Session) {
		if caps := ss.ClientCapabilities(); caps != nil && caps.RootsV2 != nil {
			pr.rootsChanged(viewID)
		}
	}
}
