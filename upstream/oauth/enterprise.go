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

// enterpriseHandler is enterprise-managed authorization: the person's ID
// token from the identity provider is exchanged there for an ID-JAG
// (RFC 8693), which the server's authorization server takes in a JWT
// bearer grant (RFC 7523). The steps are the go-sdk's and x/oauth2's
// calls (auth.GetAuthServerMetadata, oauthex.ExchangeToken, the JWT
// bearer exchange), as in the go-sdk's extauth.EnterpriseHandler; that
// handler needs the server's authorization server up front, and it hands
// out the token it obtained until the server refuses it, expired or not
// (the grant gives no refresh token). This one finds the authorization
// server from the 401 and runs the steps again, with the ID token read
// afresh, 30 s before the token expires, as the jwt_bearer grant does.
type enterpriseHandler struct {
	h *Client

	mu  sync.Mutex
	src oauth2.TokenSource
}

func (e *enterpriseHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.src, nil
}

func (e *enterpriseHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	d, err := discover(ctx, req, resp, &e.h.p)
	resp.Body.Close()
	if err != nil {
		return err
	}
	f := &enterpriseFlow{h: e.h, d: d}
	tok, err := f.run(ctx)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.src = oauth2.ReuseTokenSourceWithExpiry(tok, f, earlyExpiry)
	e.mu.Unlock()
	return nil
}

// enterpriseFlow obtains a new access token at every call.
type enterpriseFlow struct {
	h *Client
	d *discovery
}

func (f *enterpriseFlow) Token() (*oauth2.Token, error) { return f.run(context.Background()) }

func (f *enterpriseFlow) run(ctx context.Context) (*oauth2.Token, error) {
	c, client := f.h.p.Config, f.h.p.Client
	mcp, err := f.credentials(ctx, c.ClientID, "clientSecret", c.ClientSecret)
	if err != nil {
		return nil, err
	}
	idp, err := f.credentials(ctx, c.IDPClientID, "idpClientSecret", c.IDPClientSecret)
	if err != nil {
		return nil, err
	}
	endpoint, err := f.idpTokenEndpoint(ctx)
	if err != nil {
		return nil, err
	}
	// Read afresh at every flow: an ID token is short-lived.
	idToken, err := f.h.expand(ctx, "idToken", c.IDToken, true)
	if err != nil {
		return nil, err
	}
	jag, err := oauthex.ExchangeToken(ctx, endpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG, Audience: f.d.asm.Issuer, Resource: f.d.resource, Scope: f.d.scopes,
		SubjectToken: strings.TrimSpace(idToken), SubjectTokenType: oauthex.TokenTypeIDToken,
	}, idp, client)
	if err != nil {
		return nil, fmt.Errorf("the token exchange for an ID-JAG at the identity provider: %w", refusal(err))
	}
	f.h.p.Redact(jag.AccessToken)
	oc := &oauth2.Config{ClientID: mcp.ClientID, Endpoint: oauth2.Endpoint{TokenURL: f.d.asm.TokenEndpoint, AuthStyle: authStyle(f.d.asm.TokenEndpointAuthMethodsSupported)}}
	if mcp.ClientSecretAuth != nil {
		oc.ClientSecret = mcp.ClientSecretAuth.ClientSecret
	}
	tok, err := oc.Exchange(context.WithValue(ctx, oauth2.HTTPClient, client), "",
		oauth2.SetAuthURLParam("grant_type", grantTypeJWTBearer), oauth2.SetAuthURLParam("assertion", jag.AccessToken))
	if err != nil {
		return nil, fmt.Errorf("the JWT bearer grant of the ID-JAG at %s: %w", f.d.asm.Issuer, refusal(err))
	}
	return tok, nil
}

// credentials are a client's id and, when set, its secret (field).
func (f *enterpriseFlow) credentials(ctx context.Context, id, field, secret string) (*oauthex.ClientCredentials, error) {
	cc := &oauthex.ClientCredentials{ClientID: id}
	if secret != "" {
		s, err := f.h.expand(ctx, field, secret, true)
		if err != nil {
			return nil, err
		}
		cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: s}
	}
	return cc, nil
}

// idpTokenEndpoint is idpTokenEndpoint when set (an identity provider
// that only exchanges tokens need not advertise PKCE, which the go-sdk's
// metadata discovery insists on), else the token endpoint of idpIssuer's
// metadata.
func (f *enterpriseFlow) idpTokenEndpoint(ctx context.Context) (string, error) {
	c := f.h.p.Config
	if c.IDPTokenEndpoint != "" {
		return f.h.expand(ctx, "idpTokenEndpoint", c.IDPTokenEndpoint, false)
	}
	issuer, err := f.h.expand(ctx, "idpIssuer", c.IDPIssuer, false)
	if err != nil {
		return "", err
	}
	m, err := auth.GetAuthServerMetadata(ctx, issuer, f.h.p.Client)
	if err != nil {
		return "", fmt.Errorf("the identity provider's metadata: %w", err)
	}
	if m == nil || m.TokenEndpoint == "" {
		return "", fmt.Errorf("the identity provider %s publishes no metadata with a token endpoint: set idpTokenEndpoint", issuer)
	}
	return m.TokenEndpoint, nil
}

// refusal is an authorization server's error answer as it says it
// (error: error_description, without x/oauth2's quoting); any other err
// as is.
func refusal(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode == "" {
		return err
	}
	if re.ErrorDescription == "" {
		return fmt.Errorf("refused: %s", re.ErrorCode)
	}
	return fmt.Errorf("refused: %s: %s", re.ErrorCode, re.ErrorDescription)
}
