package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
)

// resolveAuth resolves every downstream token (they may be secret
// references). Resolution happens at load and reload, never per request.
func (p *Proxy) resolveAuth(ctx context.Context, c *config.Config) (*dispatch.Tokens, string, error) {
	t := &dispatch.Tokens{}
	var errs []error
	add := func(path, ref, view string, any bool) {
		v, err := p.resolver.Expand(ctx, ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			return
		}
		if v == "" {
			errs = append(errs, fmt.Errorf("%s: resolved to an empty token", path))
			return
		}
		p.redactor.Add(v)
		t.Add(v, path, view, any)
	}
	if c.Auth != nil {
		for i, tok := range c.Auth.Tokens {
			add(fmt.Sprintf("auth.tokens[%d]", i), tok, "", true)
		}
	}
	if c.Agents != nil {
		for i, ag := range c.Agents.List {
			if ag == nil {
				continue
			}
			for j, tok := range ag.Tokens {
				add(fmt.Sprintf("agents.list[%d].tokens[%d]", i, j), tok, ag.ID, false)
			}
		}
	}
	reload := ""
	if c.Admin != nil && c.Admin.ReloadToken != "" {
		v, err := p.resolver.Expand(ctx, c.Admin.ReloadToken)
		if err != nil {
			errs = append(errs, fmt.Errorf("admin.reloadToken: %w", err))
		} else {
			p.redactor.Add(v)
			reload = v
		}
	}
	return t, reload, errors.Join(errs...)
}

type ctxKey int

const viewKey ctxKey = 0

// authenticate picks the view of a downstream request and checks its bearer
// token. Without configured tokens every request is let through to the view
// its path names (an unknown agent is 404). With tokens, a missing or wrong
// one gets 401 with WWW-Authenticate, whether the agent in the path exists
// or not; with a valid token, an unknown agent is 404, an agent token on
// plain /mcp selects that agent's view, and an agent token on another
// agent's path gets 403.
func (p *Proxy) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := p.serving.Load()
		snap, at := cur.Snap, cur.Access.Tokens
		pathView, byPath := mux.Vars(r)["agent"]
		// With tokens, an unknown agent is answered only after the token
		// is checked: without one, a known and an unknown agent get the
		// same 401, and the agents cannot be enumerated.
		unknown := byPath && (pathView == "" || snap.Views[pathView] == nil)
		if unknown && !at.Enabled() {
			http.Error(w, "unknown agent", http.StatusNotFound)
			return
		}
		pr := dispatch.Principal{View: pathView}
		if at.Enabled() {
			tok, ok := bearer(r)
			var e dispatch.TokenEntry
			if ok {
				e, ok = at.Match(tok)
			}
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
				http.Error(w, "missing or invalid bearer token", http.StatusUnauthorized)
				return
			}
			switch {
			case unknown:
				http.Error(w, "unknown agent", http.StatusNotFound)
				return
			case e.Any:
			case byPath && e.View != pathView:
				http.Error(w, "token not valid for this agent", http.StatusForbidden)
				return
			case !byPath:
				pr.View = e.View
			}
			// Sessions are bound to the token that opened them (see
			// authorize).
			pr.TokenID = e.ID
		}
		r = r.WithContext(context.WithValue(r.Context(), viewKey, pr))
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
	pr, _ := r.Context().Value(viewKey).(dispatch.Principal)
	return pr
}

// checkHost enforces allowedHosts when configured (DNS rebinding protection
// for non-loopback deployments); on loopback the SDK's own check applies.
func (p *Proxy) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := p.serving.Load().Snap.Config.AllowedHosts
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

// minKey is the fewest bytes requestStateKey and sessionKey may resolve to.
const minKey = 32

// resolveKey resolves the key field names, whose value is ref ("":
// unset); the key is redacted from then on.
func (p *Proxy) resolveKey(ctx context.Context, field, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	v, err := p.resolver.Expand(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if len(v) < minKey {
		return "", fmt.Errorf("%s: resolved to %d bytes; at least %d are needed (e.g. openssl rand -base64 48)", field, len(v), minKey)
	}
	p.redactor.Add(v)
	return v, nil
}
