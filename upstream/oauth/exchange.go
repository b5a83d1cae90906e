package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// tokenTypeAccessToken is RFC 8693's name of an access token, the type of
// both the token exchanged and the one asked for.
const tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// ErrCaller matches a request whose caller's own token could not be had
// (token_exchange): the caller's failure, not the server's.
var ErrCaller = errors.New("no token for this caller")

// ErrNoCallerToken matches a token_exchange request made for a caller
// that showed switchboard no access token of the identity provider (a
// static token of auth.tokens).
var ErrNoCallerToken = errors.New("token_exchange: the caller has no access token of the identity provider to exchange")

// exchangeHandler is the token_exchange grant (RFC 8693) for one caller:
// on a 401 or 403 it discovers the server's authorization server as the
// other grants do and exchanges the caller's access token (the context's
// Caller) there for one whose audience and resource are the server's,
// authenticating the client with its secret or a private_key_jwt
// assertion. The exchange is the go-sdk's oauthex.ExchangeToken (with a
// secret) or the same x/oauth2 request with the assertion added; a
// refresh token, when the authorization server issues one, is refreshed
// by x/oauth2 (with a secret; with a private key the next 401 exchanges
// again).
type exchangeHandler struct {
	h *Client

	mu  sync.Mutex
	src oauth2.TokenSource
}

// tokenExchange builds the handler; e, a token kept from before a
// restart, is used first, and refreshed when it carries a refresh token.
func (h *Client) tokenExchange(ctx context.Context, e *Entry) (auth.OAuthHandler, error) {
	x := &exchangeHandler{h: h}
	if e == nil || e.Token == nil || e.Token.RefreshToken == "" || e.TokenURL == "" || h.p.Config.ClientSecret == "" {
		return x, nil // a valid stored token serves until it expires (Client.TokenSource)
	}
	meta := *e
	meta.Token = nil
	src, err := x.refreshing(ctx, e.Token, meta)
	if err != nil {
		return nil, err
	}
	x.src = src
	return x, nil
}

func (x *exchangeHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.src, nil
}

func (x *exchangeHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	p := &x.h.p
	c, _ := CallerOf(ctx)
	if c.Token == "" {
		return fmt.Errorf("%w: %w", ErrCaller, ErrNoCallerToken)
	}
	d, err := discover(ctx, req, resp, p)
	if err != nil {
		return err
	}
	tok, err := x.exchange(ctx, d, c.Token)
	if err != nil {
		// Refused for this caller (its token expired, revoked, not
		// allowed there): the next caller's may well be exchanged.
		return fmt.Errorf("%w: token exchange: %w", ErrCaller, err)
	}
	meta := Entry{ClientID: p.Config.ClientID, TokenURL: d.asm.TokenEndpoint,
		AuthStyle: int(authStyle(d.asm.TokenEndpointAuthMethodsSupported)), Scopes: d.scopes}
	var src oauth2.TokenSource = oauth2.StaticTokenSource(tok)
	if tok.RefreshToken != "" && p.Config.ClientSecret != "" {
		if src, err = x.refreshing(ctx, tok, meta); err != nil {
			return err
		}
	} else {
		src = &savingSource{h: x.h, base: &expiring{tok: tok}, meta: meta}
	}
	x.mu.Lock()
	x.src = src
	x.mu.Unlock()
	return nil
}

// refreshing is tok, refreshed with the client's secret at meta's token
// endpoint before it expires, and saved as it changes.
func (x *exchangeHandler) refreshing(ctx context.Context, tok *oauth2.Token, meta Entry) (oauth2.TokenSource, error) {
	secret, err := x.h.expand(ctx, "clientSecret", x.h.p.Config.ClientSecret, true)
	if err != nil {
		return nil, err
	}
	oc := &oauth2.Config{ClientID: meta.ClientID, ClientSecret: secret, Scopes: meta.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: meta.TokenURL, AuthStyle: oauth2.AuthStyle(meta.AuthStyle)}}
	// Refreshes outlive the call that starts them: they run on a context
	// of their own that carries the client.
	rctx := context.WithValue(context.Background(), oauth2.HTTPClient, x.h.p.Client)
	return &savingSource{h: x.h, base: oauth2.ReuseTokenSourceWithExpiry(tok, oc.TokenSource(rctx, tok), earlyExpiry), meta: meta}, nil
}

// exchange asks d's authorization server for a token for d's resource in
// exchange of subject, the caller's access token.
func (x *exchangeHandler) exchange(ctx context.Context, d *discovery, subject string) (*oauth2.Token, error) {
	c := x.h.p.Config
	if c.PrivateKey == "" {
		secret, err := x.h.expand(ctx, "clientSecret", c.ClientSecret, true)
		if err != nil {
			return nil, err
		}
		return oauthex.ExchangeToken(ctx, d.asm.TokenEndpoint, &oauthex.TokenExchangeRequest{
			RequestedTokenType: tokenTypeAccessToken, Audience: d.resource, Resource: d.resource, Scope: d.scopes,
			SubjectToken: subject, SubjectTokenType: tokenTypeAccessToken,
		}, &oauthex.ClientCredentials{ClientID: c.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}}, x.h.p.Client)
	}
	// oauthex.ExchangeToken authenticates with a secret only: the same
	// request through x/oauth2, with a private_key_jwt client assertion.
	signed, err := x.h.clientAssertion(ctx, d.asm.Issuer)
	if err != nil {
		return nil, err
	}
	opts := []oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("grant_type", oauthex.GrantTypeTokenExchange),
		oauth2.SetAuthURLParam("requested_token_type", tokenTypeAccessToken),
		oauth2.SetAuthURLParam("audience", d.resource),
		oauth2.SetAuthURLParam("resource", d.resource),
		oauth2.SetAuthURLParam("subject_token", subject),
		oauth2.SetAuthURLParam("subject_token_type", tokenTypeAccessToken),
		oauth2.SetAuthURLParam("client_assertion_type", clientAssertionType),
		oauth2.SetAuthURLParam("client_assertion", signed),
	}
	if len(d.scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(d.scopes, " ")))
	}
	oc := &oauth2.Config{ClientID: c.ClientID, Endpoint: oauth2.Endpoint{TokenURL: d.asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	return oc.Exchange(context.WithValue(ctx, oauth2.HTTPClient, x.h.p.Client), "", opts...)
}

// expiring hands out tok until it expires, then fails: the request goes
// without a token, and its 401 starts a new exchange.
type expiring struct{ tok *oauth2.Token }

func (e *expiring) Token() (*oauth2.Token, error) {
	if e.tok.Valid() {
		return e.tok, nil
	}
	return nil, errors.New("the exchanged token expired")
}
