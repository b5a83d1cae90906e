package oauth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// The RFC 7523 names.
const (
	grantTypeJWTBearer  = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// assertionHandler obtains tokens with a JWT: client_credentials
// authenticated by a private_key_jwt client assertion (RFC 7523 §2.2), or
// the jwt_bearer grant whose assertion is read afresh for every token
// request (RFC 7523 §2.1). The go-sdk's handlers do neither; the token
// requests are x/oauth2's, the signing golang-jwt's.
type assertionHandler struct {
	p      *Params
	h      *Client
	bearer bool

	mu  sync.Mutex
	src oauth2.TokenSource
}

func (a *assertionHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.src, nil
}

func (a *assertionHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	d, err := discover(ctx, req, resp, a.p)
	resp.Body.Close()
	if err != nil {
		return err
	}
	ts := &assertionSource{a: a, d: d}
	tok, err := ts.Token()
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.src = oauth2.ReuseTokenSourceWithExpiry(tok, ts, earlyExpiry)
	a.mu.Unlock()
	return nil
}

// assertionSource requests a new token at every call.
type assertionSource struct {
	a *assertionHandler
	d *discovery
}

func (s *assertionSource) Token() (*oauth2.Token, error) {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.a.p.Client)
	c := s.a.p.Config
	params := url.Values{}
	if s.d.resource != "" {
		params.Set("resource", s.d.resource)
	}
	cc := &clientcredentials.Config{ClientID: c.ClientID, TokenURL: s.d.asm.TokenEndpoint, Scopes: s.d.scopes,
		AuthStyle: oauth2.AuthStyleInParams, EndpointParams: params}
	if s.a.bearer {
		jwt, err := s.a.h.expand(ctx, "assertion", c.Assertion, true)
		if err != nil {
			return nil, err
		}
		params.Set("grant_type", grantTypeJWTBearer)
		params.Set("assertion", strings.TrimSpace(jwt))
	}
	switch {
	case c.PrivateKey != "":
		signed, err := s.a.h.clientAssertion(ctx, s.d.asm.Issuer)
		if err != nil {
			return nil, err
		}
		params.Set("client_assertion_type", clientAssertionType)
		params.Set("client_assertion", signed)
	case c.ClientSecret != "":
		secret, err := s.a.h.expand(ctx, "clientSecret", c.ClientSecret, true)
		if err != nil {
			return nil, err
		}
		cc.ClientSecret, cc.AuthStyle = secret, authStyle(s.d.asm.TokenEndpointAuthMethodsSupported)
	}
	tok, err := cc.Token(ctx)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: token request: %w", s.a.p.Key.Server, err)
	}
	return tok, nil
}

// clientAssertion signs a fresh private_key_jwt assertion: the client is
// its issuer and subject, the authorization server (issuer) its audience.
func (h *Client) clientAssertion(ctx context.Context, issuer string) (string, error) {
	c := h.p.Config
	pem, err := h.expand(ctx, "privateKey", c.PrivateKey, true)
	if err != nil {
		return "", err
	}
	key, method, err := parseKey([]byte(pem), c.SigningAlgorithm)
	if err != nil {
		return "", fmt.Errorf("oauth.privateKey: %w", err)
	}
	jti := make([]byte, 16)
	rand.Read(jti)
	now := time.Now()
	claims := jwt.RegisteredClaims{
		Issuer: c.ClientID, Subject: c.ClientID, Audience: jwt.ClaimStrings{issuer},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Minute)),
		ID: hex.EncodeToString(jti),
	}
	return jwt.NewWithClaims(method, claims).SignedString(key)
}

// parseKey reads a PEM private key and the method alg names (by default
// ES256 for an EC key, RS256 for RSA, EdDSA for Ed25519).
func parseKey(pem []byte, alg string) (any, jwt.SigningMethod, error) {
	if k, err := jwt.ParseECPrivateKeyFromPEM(pem); err == nil {
		return k, method(alg, "ES256"), nil
	}
	if k, err := jwt.ParseRSAPrivateKeyFromPEM(pem); err == nil {
		return k, method(alg, "RS256"), nil
	}
	if k, err := jwt.ParseEdPrivateKeyFromPEM(pem); err == nil {
		return k, method(alg, "EdDSA"), nil
	}
	return nil, nil, fmt.Errorf("not a PEM EC, RSA or Ed25519 private key")
}

func method(alg, def string) jwt.SigningMethod {
	if alg == "" {
		alg = def
	}
	return jwt.GetSigningMethod(alg)
}

// authStyle is how to send a client secret, by what the server supports.
func authStyle(supported []string) oauth2.AuthStyle {
	for _, m := range supported {
		if m == "client_secret_post" {
			return oauth2.AuthStyleInParams
		}
	}
	return oauth2.AuthStyleInHeader
}

// discovery is what a 401 led to: the authorization server and what to
// ask it for.
type discovery struct {
	asm      *oauthex.AuthServerMeta
	resource string
	scopes   []string
}

// discover follows a 401 or 403 to the authorization server: the
// WWW-Authenticate challenge's resource_metadata, else protected-resource
// metadata at the endpoint's path and at the root (RFC 9728), else the
// endpoint's origin as the authorization server (2025-03-26); then that
// server's metadata (RFC 8414, OpenID discovery), else its default
// endpoints.
func discover(ctx context.Context, req *http.Request, resp *http.Response, p *Params) (*discovery, error) {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, fmt.Errorf("upstream %q: WWW-Authenticate: %w", p.Key.Server, err)
	}
	var metaURL string
	var challenged []string
	for _, c := range cs {
		if c.Scheme == "bearer" {
			metaURL = c.Params["resource_metadata"]
			if s := c.Params["scope"]; s != "" {
				challenged = strings.Fields(s)
			}
		}
	}
	resource := req.URL.String()
	prm := findPRM(ctx, metaURL, req.URL, p.Client)
	d := &discovery{resource: resource}
	as := ""
	if prm != nil {
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("upstream %q: its protected-resource metadata names no authorization server", p.Key.Server)
		}
		as, d.resource = prm.AuthorizationServers[0], prm.Resource
	} else {
		u := *req.URL
		u.Path, u.RawQuery, u.RawPath = "", "", ""
		as = u.String()
	}
	asm, err := auth.GetAuthServerMetadata(ctx, as, p.Client)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: authorization server metadata: %w", p.Key.Server, err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: as, TokenEndpoint: strings.TrimSuffix(as, "/") + "/token"}
	}
	d.asm = asm
	switch {
	case len(p.Config.Scopes) > 0:
		d.scopes = p.Config.Scopes
	case len(challenged) > 0:
		d.scopes = challenged
	case prm != nil:
		d.scopes = prm.ScopesSupported
	}
	return d, nil
}

// findPRM fetches protected-resource metadata from the first place that
// has it; nil when none does.
func findPRM(ctx context.Context, metaURL string, endpoint *url.URL, c *http.Client) *oauthex.ProtectedResourceMetadata {
	type try struct{ url, resource string }
	var tries []try
	if metaURL != "" {
		tries = append(tries, try{metaURL, endpoint.String()})
	}
	u := *endpoint
	u.RawQuery, u.RawPath = "", ""
	u.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(endpoint.Path, "/")
	tries = append(tries, try{u.String(), endpoint.String()})
	root := *endpoint
	root.Path, root.RawQuery, root.RawPath = "", "", ""
	u.Path = "/.well-known/oauth-protected-resource"
	tries = append(tries, try{u.String(), root.String()})
	for _, t := range tries {
		if prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.url, t.resource, c); err == nil && prm != nil {
			return prm
		}
	}
	return nil
}
