package edge

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/internal/accesstoken"
)

type ctxKey int

const viewKey ctxKey = 0

// authenticate picks the view of a downstream request and checks its bearer
// token. Without configured tokens or identity provider every request is
// let through to the view its path names (an unknown agent is 404). With
// them, a missing or wrong token gets 401 with WWW-Authenticate, whether
// the agent in the path exists or not; with a valid token, an unknown
// agent is 404, an agent token on plain /mcp selects that agent's view,
// and an agent token on another agent's path gets 403. An access token of
// the identity provider (auth.oauth) is checked when no static token
// matches (oauthPrincipal).
func (e *Edge) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := e.genOf(r)
		snap, at := cur.Snap, cur.Access.Tokens
		idp, _ := cur.Access.OAuth.(*accesstoken.Verifier)
		enabled := at.Enabled() || idp != nil
		pathView, byPath := mux.Vars(r)["agent"]
		// With tokens, an unknown agent is answered only after the token
		// is checked: without one, a known and an unknown agent get the
		// same 401, and the agents cannot be enumerated.
		unknown := byPath && (pathView == "" || snap.Views[pathView] == nil)
		if unknown && !enabled {
			http.Error(w, "unknown agent", http.StatusNotFound)
			return
		}
		pr := dispatch.Principal{View: pathView}
		cred := "" // the identity provider's access token, for token_exchange
		if enabled {
			tok, ok := bearer(r)
			var te dispatch.TokenEntry
			matched := false
			if ok && at.Enabled() {
				te, matched = at.Match(tok)
			}
			switch {
			case matched:
				switch {
				case unknown:
					http.Error(w, "unknown agent", http.StatusNotFound)
					return
				case te.Any:
				case byPath && te.View != pathView:
					http.Error(w, "token not valid for this agent", http.StatusForbidden)
					return
				case !byPath:
					pr.View = te.View
				}
				// Sessions are bound to the value of the token that opened
				// them, not to its place in the config (see authorize).
				pr.TokenID, pr.Holder = te.ID, te.Holder()
			case ok && idp != nil:
				var done bool
				if pr, done = oauthPrincipal(w, r, idp, tok, pathView, byPath, unknown, func(v string) bool { return snap.Views[v] != nil }); done {
					return
				}
				cred = tok
			default:
				challenge(w, idp, r.URL.Path, nil)
				http.Error(w, "missing or invalid bearer token", http.StatusUnauthorized)
				return
			}
		}
		if held := dispatch.HeldIn(r.Context()); held != nil {
			// A POST: the principal rides on the context that holds its
			// generation.
			held.Principal, held.Credential = pr, cred
		} else {
			r = r.WithContext(context.WithValue(r.Context(), viewKey, pr))
		}
		next.ServeHTTP(w, r)
	})
}

func bearer(r *http.Request) (string, bool) {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return "", false
	}
	return f[1], true
}

func principalOf(r *http.Request) dispatch.Principal {
	if held := dispatch.HeldIn(r.Context()); held != nil {
		return held.Principal
	}
	pr, _ := r.Context().Value(viewKey).(dispatch.Principal)
	return pr
}

// checkHost enforces allowedHosts when configured (DNS rebinding protection
// for non-loopback deployments); on loopback the SDK's own check applies.
func (e *Edge) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := e.genOf(r).Snap.Config.AllowedHosts
		if len(allowed) > 0 {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			ok := false
			for _, a := range allowed {
				if strings.EqualFold(a, host) || strings.EqualFold(a, r.Host) {
					ok = true
					break
				}
			}
			if !ok {
				http.Error(w, "host not allowed", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
