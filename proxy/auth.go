package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// authTable holds the resolved downstream bearer tokens of one snapshot.
// Tokens are kept only as SHA-256 digests; comparison is constant time.
// access is who may use one generation: the downstream tokens and the
// admin reload token, resolved from its config.
type access struct {
	auth        *authTable
	reloadToken string
}

type authTable struct {
	entries []authEntry
}

type authEntry struct {
	digest [sha256.Size]byte
	id     string // config path of the token, logged and audited instead of the token
	view   string // "" with any=true: a global token; else the agent's view
	any    bool
}

// match returns the entry for token. Every entry is compared, so the time
// taken does not depend on which one matches.
func (t *authTable) match(token string) (authEntry, bool) {
	d := sha256.Sum256([]byte(token))
	var found authEntry
	ok := false
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 && !ok {
			found, ok = e, true
		}
	}
	return found, ok
}

func (t *authTable) enabled() bool { return t != nil && len(t.entries) > 0 }

// resolveAuth resolves every downstream token (they may be secret
// references). Resolution happens at load and reload, never per request.
func (p *Proxy) resolveAuth(ctx context.Context, c *config.Config) (*authTable, string, error) {
	t := &authTable{}
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
		t.entries = append(t.entries, authEntry{digest: sha256.Sum256([]byte(v)), id: path, view: view, any: any})
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

// principal is who a downstream request is, once authenticated.
type principal struct {
	view    string
	tokenID string
}

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
		snap, at := cur.snap, cur.access.auth
		pathView, byPath := mux.Vars(r)["agent"]
		// With tokens, an unknown agent is answered only after the token
		// is checked: without one, a known and an unknown agent get the
		// same 401, and the agents cannot be enumerated.
		unknown := byPath && (pathView == "" || snap.Views[pathView] == nil)
		if unknown && !at.enabled() {
			http.Error(w, "unknown agent", http.StatusNotFound)
			return
		}
		pr := principal{view: pathView}
		if at.enabled() {
			tok, ok := bearer(r)
			var e authEntry
			if ok {
				e, ok = at.match(tok)
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
			case e.any:
			case byPath && e.view != pathView:
				http.Error(w, "token not valid for this agent", http.StatusForbidden)
				return
			case !byPath:
				pr.view = e.view
			}
			// Sessions are bound to the token that opened them (see
			// authorize).
			pr.tokenID = e.id
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

// Caller is what a call's requestState is bound to (mrtr.Caller): the
// view and the token.
func (pr principal) Caller() string { return pr.view + "\x00" + pr.tokenID }

func principalOf(r *http.Request) principal {
	pr, _ := r.Context().Value(viewKey).(principal)
	return pr
}

// checkHost enforces allowedHosts when configured (DNS rebinding protection
// for non-loopback deployments); on loopback the SDK's own check applies.
func (p *Proxy) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := p.serving.Load().snap.Config.AllowedHosts
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
