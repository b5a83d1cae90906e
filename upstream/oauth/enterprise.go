package oauth

import (
	"context"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// enterpriseHandler is the go-sdk's EnterpriseHandler (enterprise-managed
// authorization: the person's ID token exchanged at the identity provider
// for an ID-JAG, which the server's authorization server takes in a JWT
// bearer grant). That handler needs the server's authorization server up
// front; this one finds it from the 401 first.
type enterpriseHandler struct {
	h *Handler

	mu    sync.Mutex
	inner *extauth.EnterpriseHandler
}

func (e *enterpriseHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	e.mu.Lock()
	in := e.inner
	e.mu.Unlock()
	if in == nil {
		return nil, nil
	}
	return in.TokenSource(ctx)
}

func (e *enterpriseHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	p := &e.h.p
	c := p.Config
	d, err := discover(ctx, req, resp, p)
	if err != nil {
		resp.Body.Close()
		return err
	}
	mcp := &oauthex.ClientCredentials{ClientID: c.ClientID}
	if c.ClientSecret != "" {
		s, err := e.h.expand(ctx, "clientSecret", c.ClientSecret, true)
		if err != nil {
			resp.Body.Close()
			return err
		}
		mcp.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: s}
	}
	idp := &oauthex.ClientCredentials{ClientID: c.IDPClientID}
	if c.IDPClientSecret != "" {
		s, err := e.h.expand(ctx, "idpClientSecret", c.IDPClientSecret, true)
		if err != nil {
			resp.Body.Close()
			return err
		}
		idp.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: s}
	}
	issuer, err := e.h.expand(ctx, "idpIssuer", c.IDPIssuer, false)
	if err != nil {
		resp.Body.Close()
		return err
	}
	in, err := extauth.NewEnterpriseHandler(&extauth.EnterpriseHandlerConfig{
		IdPIssuerURL: issuer, IdPCredentials: idp,
		MCPAuthServerURL: d.asm.Issuer, MCPResourceURI: d.resource, MCPCredentials: mcp, MCPScopes: d.scopes,
		IDTokenFetcher: func(ctx context.Context) (*oauth2.Token, error) {
			// Read afresh at every flow: an ID token is short-lived.
			id, err := e.h.expand(ctx, "idToken", c.IDToken, true)
			if err != nil {
				return nil, err
			}
			return (&oauth2.Token{}).WithExtra(map[string]any{"id_token": id}), nil
		},
		HTTPClient: p.Client,
	})
	if err != nil {
		resp.Body.Close()
		return err
	}
	if err := in.Authorize(ctx, req, resp); err != nil {
		return err
	}
	e.mu.Lock()
	e.inner = in
	e.mu.Unlock()
	return nil
}
