package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Grants (Config.Grant), as the config names them.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	GrantJWTBearer         = "jwt_bearer"
	GrantEnterprise        = "enterprise"
	GrantTokenExchange     = "token_exchange"
)

// DefaultRedirectURI is where auth login takes the redirect when the
// config names none.
const DefaultRedirectURI = "http://127.0.0.1:8976/callback"

// Config is a server's oauth block as written: values may hold references,
// which Params.Expand resolves when a token is requested.
type Config struct {
	Grant             string
	Scopes            []string `json:",omitempty"`
	ClientID          string   `json:",omitempty"`
	ClientSecret      string   `json:",omitempty"`
	ClientMetadataURL string   `json:",omitempty"`
	PrivateKey        string   `json:",omitempty"`
	SigningAlgorithm  string   `json:",omitempty"`
	Assertion         string   `json:",omitempty"`
	RedirectURI       string   `json:",omitempty"`
	IDPIssuer         string   `json:",omitempty"`
	IDPClientID       string   `json:",omitempty"`
	IDPClientSecret   string   `json:",omitempty"`
	IDPTokenEndpoint  string   `json:",omitempty"`
	IDToken           string   `json:",omitempty"`
	TokenStore        string   `json:",omitempty"`
	TokenStoreKey     string   `json:",omitempty"`
	// DPoP is DPoPAuto ("": the same), DPoPOn or DPoPOff; only
	// authorization_code sends DPoP proofs.
	DPoP string `json:",omitempty"`
	// PerCaller (authorization_code): a token per caller (NewPerCaller).
	PerCaller bool `json:",omitempty"`
}

// Redirect is the redirect URI authorization_code uses.
func (c *Config) Redirect() string {
	if c.RedirectURI != "" {
		return c.RedirectURI
	}
	return DefaultRedirectURI
}

// ErrConsent matches a server that needs a person's consent first: run
// `switchboard auth login NAME`.
var ErrConsent = errors.New("needs consent")

// Params is what New needs besides the config.
type Params struct {
	Key    Key    // the server and principal the token is for
	URL    string // the server's MCP endpoint, the resource
	Config *Config
	// Expand resolves references in the config's values.
	Expand func(ctx context.Context, v string) (string, error)
	Store  Store
	// Redact is told every token and secret value met, so that logs,
	// /status and audit never show it. Nil: nothing is told.
	Redact func(string)
	// Client sends discovery, registration and token requests.
	Client *http.Client
	// Fetcher runs the person's part of authorization_code (auth login);
	// nil: a server without a stored token fails with ErrConsent, or
	// asks its caller in band (Consents).
	Fetcher auth.AuthorizationCodeFetcher
	// Consents, when set, takes an authorization_code consent in band
	// for a call that offers it (WithAsking), if the config's redirect
	// URI is switchboard's own callback (CallbackPath).
	Consents *Consents
}

// Client is the auth.OAuthHandler of one server: the grant's handler,
// with its tokens kept in the store, told to the redactor, and refreshed
// before they expire.
type Client struct {
	p     Params
	inner auth.OAuthHandler

	mu       sync.Mutex
	innerSrc oauth2.TokenSource // the inner handler's, which src wraps
	src      oauth2.TokenSource
	stored   *Entry          // from the store at start, until the inner has its own
	last     string          // the access token last taken from the store or handed out
	pending  *pendingConsent // an in-band authorization under way
	dpop     *dpopTransport  // the token requests' DPoP; nil: bearer only

	startBase string // in-band consent's start URLs' base; "": not in band
}

// earlyExpiry is how long before its expiry a token is refreshed.
const earlyExpiry = 30 * time.Second

// New builds the handler for p.Config.Grant.
func New(ctx context.Context, p Params) (*Client, error) {
	if p.Client == nil {
		p.Client = http.DefaultClient
	}
	if p.Redact == nil {
		p.Redact = func(string) {}
	}
	if p.Expand == nil {
		p.Expand = func(_ context.Context, v string) (string, error) { return v, nil }
	}
	if p.Store == nil {
		p.Store = NewMemoryStore()
	}
	h := &Client{p: p}
	if p.Consents != nil && p.Config.Grant == GrantAuthorizationCode {
		h.startBase = inBandBase(p.Config.Redirect())
	}
	if p.Config.Grant == GrantAuthorizationCode && p.Config.DPoP != DPoPOff {
		d, err := newDPoPTransport(p.Client.Transport, p.Config.DPoP)
		if err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
		c := *p.Client
		c.Transport = d
		h.p.Client, h.dpop = &c, d
	}
	e, err := p.Store.Load(p.Key)
	if err != nil {
		return nil, err
	}
	if e != nil && e.Token != nil {
		h.last = e.Token.AccessToken
		p.Redact(e.Token.AccessToken)
		p.Redact(e.Token.RefreshToken)
		p.Redact(e.ClientSecret)
		p.Redact(e.DPoPKey)
	}
	c := p.Config
	switch c.Grant {
	case GrantAuthorizationCode:
		h.inner, err = h.authorizationCode(ctx, e)
	case GrantClientCredentials:
		h.stored = e
		if c.PrivateKey != "" {
			h.inner = &assertionHandler{p: &h.p, h: h}
		} else {
			h.inner, err = h.clientSecret(ctx)
		}
	case GrantJWTBearer:
		h.stored = e
		h.inner = &assertionHandler{p: &h.p, h: h, bearer: true}
	case GrantEnterprise:
		h.stored = e
		h.inner = &enterpriseHandler{h: h}
	case GrantTokenExchange:
		h.stored = e
		h.inner, err = h.tokenExchange(ctx, e)
	default:
		err = fmt.Errorf("grant %q: not one switchboard knows", c.Grant)
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	return h, nil
}

// expand resolves one config value and tells the redactor of it when it
// is secret.
func (h *Client) expand(ctx context.Context, field, v string, secret bool) (string, error) {
	x, err := h.p.Expand(ctx, v)
	if err != nil {
		return "", fmt.Errorf("oauth.%s: %w", field, err)
	}
	if secret {
		h.p.Redact(x)
	}
	return x, nil
}

// TokenSource is the inner handler's, saving what it hands out; before
// the inner has one, a token still valid from the store.
func (h *Client) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	inner := h.inner
	h.mu.Unlock()
	in, err := inner.TokenSource(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if in == nil {
		if h.stored != nil && h.stored.Token.Valid() {
			return oauth2.StaticTokenSource(h.stored.Token), nil
		}
		return nil, nil
	}
	if in != h.innerSrc {
		h.innerSrc, h.src = in, in
		if _, ok := in.(*savingSource); !ok {
			h.src = &savingSource{h: h, base: in}
		}
	}
	return h.src, nil
}

// Authorize runs the grant's flow (after a 401 or 403).
// Without a Fetcher (a running server, not auth login), an
// authorization_code server first looks in the store again: a consent
// given with auth login since is taken up at once.
func (h *Client) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.mu.Lock()
	h.stored = nil
	last := h.last
	h.mu.Unlock()
	if h.p.Config.Grant == GrantAuthorizationCode && h.p.Fetcher == nil {
		if e, err := h.p.Store.Load(h.p.Key); err == nil && e != nil && e.Token != nil && e.Token.AccessToken != last {
			inner, err := h.authorizationCode(ctx, e)
			if err == nil {
				resp.Body.Close()
				h.mu.Lock()
				h.inner, h.last = inner, e.Token.AccessToken
				h.mu.Unlock()
				return nil
			}
		}
		if a := askingOf(ctx); a != nil && h.startBase != "" && a.Principal == h.p.Key.Principal {
			return h.inBand(ctx, req, resp, a)
		}
	}
	h.mu.Lock()
	inner := h.inner
	h.mu.Unlock()
	return inner.Authorize(ctx, req, resp)
}

// Grant is the configured grant.
func (h *Client) Grant() string { return h.p.Config.Grant }

// savingSource saves every new token its base hands out and tells the
// redactor of it.
type savingSource struct {
	h    *Client
	base oauth2.TokenSource

	mu   sync.Mutex
	last string
	meta Entry // what refreshing needs, for authorization_code
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.base.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok.AccessToken != s.last {
		s.last = tok.AccessToken
		s.h.keep(tok, &s.meta)
	}
	return tok, nil
}

// keep tells the redactor of tok and saves it with meta.
func (h *Client) keep(tok *oauth2.Token, meta *Entry) {
	h.mu.Lock()
	h.last = tok.AccessToken
	h.mu.Unlock()
	h.p.Redact(tok.AccessToken)
	h.p.Redact(tok.RefreshToken)
	e := *meta
	e.Token, e.Grant, e.Saved = tok, h.p.Config.Grant, time.Now().UTC()
	if h.dpop != nil && isDPoP(tok) {
		e.DPoPKey = h.dpop.current().marshal()
	}
	// A store that fails leaves the token in use: only a restart has to
	// obtain it again.
	_ = h.p.Store.Save(h.p.Key, &e)
}

// clientSecret is client_credentials with a secret: the go-sdk's handler.
func (h *Client) clientSecret(ctx context.Context) (auth.OAuthHandler, error) {
	c := h.p.Config
	secret, err := h.expand(ctx, "clientSecret", c.ClientSecret, true)
	if err != nil {
		return nil, err
	}
	return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: c.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
		HTTPClient:  h.p.Client,
	})
}
