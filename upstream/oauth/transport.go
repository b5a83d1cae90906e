package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// ErrNoToken matches a request that was not sent because no access token
// could be had for it: the grant's flow failed (its authorization server
// or identity provider refused, or could not be reached). The token's
// failure, not the connection's: the next request runs the flow again.
var ErrNoToken = errors.New("no access token could be had")

// Transport sets the Authorization header of every request to the
// server's own origin from Handler's token, and on a 401 or 403 from there
// calls Handler.Authorize once and sends the request again. A request to
// any other origin (a redirect the egress rules allow) carries no token,
// whoever set one. It sits below the client's egress checks, so POSTs, the
// standalone GET stream, DELETE and legacy SSE all go through it.
type Transport struct {
	Base    http.RoundTripper
	Handler auth.OAuthHandler
	// Home reports whether u is the server's configured origin.
	Home func(u *url.URL) bool
	// Server names the server in errors.
	Server string

	// One Authorize at a time: per caller (CallerOf) when the tokens are
	// per caller, so that one caller's slow exchange holds up no other's;
	// else one for the server.
	locks sync.Map // caller principal → *sync.Mutex
	// The latest DPoP-Nonce of each origin, for the proofs of
	// DPoP-bound tokens.
	nonces nonces
}

func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.Home(r.URL) {
		if r.Header.Get("Authorization") != "" {
			r = r.Clone(r.Context())
			r.Header.Del("Authorization")
		}
		return t.Base.RoundTrip(r)
	}
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		// Buffer the body so that the request can be sent again.
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		r.Body, _ = r.GetBody()
	}
	sent, first, resp, err := t.send(r, false)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if err := t.authorize(first, resp, sent); err != nil {
		return nil, fmt.Errorf("upstream %q: %w: %w", t.Server, ErrNoToken, err)
	}
	_, _, resp, err = t.send(r, true)
	return resp, err
}

// send sends r (its body afresh when again) with the current token; a
// DPoP-bound token's request refused for want of the server's nonce
// (use_dpop_nonce) is sent once more with the nonce. It returns the token
// sent and the request last sent.
func (t *Transport) send(r *http.Request, again bool) (string, *http.Request, *http.Response, error) {
	for try := 0; ; try++ {
		req := r
		if again || try > 0 {
			req = r.Clone(r.Context())
			if r.GetBody != nil {
				var err error
				if req.Body, err = r.GetBody(); err != nil {
					return "", nil, nil, err
				}
			}
		}
		sent, req, err := t.authorized(req)
		if err != nil {
			return "", nil, nil, err
		}
		resp, err := t.Base.RoundTrip(req)
		if err == nil {
			t.nonces.seen(req.URL, resp)
		}
		// Another request may have kept the same nonce meanwhile: a
		// refusal with a nonce is answered once whether it is new or not.
		if err != nil || req.Header.Get("DPoP") == "" || resp.Header.Get("DPoP-Nonce") == "" || try > 0 ||
			resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "use_dpop_nonce") {
			return sent, req, resp, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// dpopOf is the DPoP of the Client h sends ctx's request with (a caller's
// own, for PerCaller); nil: bearer only.
func dpopOf(ctx context.Context, h auth.OAuthHandler) *dpopTransport {
	switch h := h.(type) {
	case *Client:
		return h.dpop
	case *PerCaller:
		if c, err := h.of(ctx); err == nil {
			return c.dpop
		}
	}
	return nil
}

// authorized returns r with the current token, and that token ("" none).
func (t *Transport) authorized(r *http.Request) (string, *http.Request, error) {
	ts, err := t.Handler.TokenSource(r.Context())
	if err != nil || ts == nil {
		return "", r, err
	}
	tok, err := ts.Token()
	if err != nil {
		// A refresh that failed (a revoked refresh token): the request
		// goes without, and its 401 starts a new authorization.
		return "", r, nil
	}
	r = r.Clone(r.Context())
	if d := dpopOf(r.Context(), t.Handler); d != nil && isDPoP(tok) {
		p, err := d.current().proof(r.Method, r.URL, tok.AccessToken, t.nonces.get(r.URL))
		if err != nil {
			return "", r, err
		}
		r.Header.Set("Authorization", "DPoP "+tok.AccessToken)
		r.Header.Set("DPoP", p)
		return tok.AccessToken, r, nil
	}
	r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return tok.AccessToken, r, nil
}

// authorize calls Authorize for a request sent with token sent, unless
// another request's authorization already replaced that token.
func (t *Transport) authorize(r *http.Request, resp *http.Response, sent string) error {
	key := ""
	if _, ok := t.Handler.(*PerCaller); ok {
		c, _ := CallerOf(r.Context())
		key = c.Principal
	}
	mu, _ := t.locks.LoadOrStore(key, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if ts, err := t.Handler.TokenSource(r.Context()); err == nil && ts != nil && resp.StatusCode == http.StatusUnauthorized {
		if tok, err := ts.Token(); err == nil && tok.AccessToken != sent {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
	}
	return t.Handler.Authorize(r.Context(), r, resp)
}
