package edge

import (
	"net/http"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// openHTTP opens a session for an HTTP request (its principal is in the
// request's context); without an ID, for one 2026-07-28 request.
func (e *Edge) openHTTP(r *http.Request, id string) (*session.Session, error) {
	if id == "" {
		return e.d.OpenStateless(principalOf(r))
	}
	return e.d.Open(principalOf(r), id, nil, nil)
}

// authorize reports whether an HTTP request may use a session: the same
// view and the same token value (without tokens, the same view) that
// opened it. A token's place in the config does not count: after a reload
// that removed the token before it, another token is at that place.
func (e *Edge) authorize(ss *session.Session, r *http.Request) bool {
	return principalOf(r).Same(dispatch.PrincipalOf(ss))
}

// openHTTPStream opens a session for an HTTP request whose own stream is
// out (a legacy SSE stream).
func (e *Edge) openHTTPStream(r *http.Request, id string, out session.Stream) (*session.Session, error) {
	return e.d.Open(principalOf(r), id, out, nil)
}
