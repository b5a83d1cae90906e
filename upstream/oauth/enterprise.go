package oauth

import (
	"context"
	"fmt"
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
	h *Client

	mu     sync.Mutex
	inner  *extauth.EnterpriseHandler
	static oauth2.TokenSource // the token of exchange
}

func (e *enterpriseHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	e.mu.Lock()
	in, static := e.inner, e.static
	e.mu.Unlock()
	if in == nil {
		return static, nil
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
	fetch := func(ctx context.Context) (*oauth2.Token, error) {
		// Read afresh at every flow: an ID token is short-lived.
		id, err := e.h.expand(ctx, "idToken", c.IDToken, true)
		if err != nil {
			return nil, err
		}
		return (&oauth2.Token{}).WithExtra(map[string]any{"id_token": id}), nil
	}
	if c.IDPTokenEndpoint != "" {
		resp.Body.Close()
		return e.exchange(ctx, d, idp, mcp, fetch)
	}
	issuer, err := e.h.expand(ctx, "idpIssuer", c.IDPIssuer, false)
	if err != nil {
		resp.Body.Close()
		return err
	}
	in, err := extauth.NewEnterpriseHandler(&extauth.EnterpriseHandlerConfig{
		IdPIssuerURL: issuer, IdPCredentials: idp,
		MCPAuthServerURL: d.asm.Issuer, MCPResourceURI: d.resource, MCPCredentials: mcp, MCPScopes: d.scopes,
		IDTokenFetcher: fetch, HTTPClient: p.Client,
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

// exchange is the flow with the identity provider's token endpoint given
// (idpTokenEndpoint): the go-sdk's handler discovers it from metadata,
// which it refuses when it does not advertise PKCE, as an identity
// provider that only exchanges tokens need not. The steps are the same
// go-sdk and x/oauth2 calls: oauthex.ExchangeToken for the ID-JAG, then
// the JWT bearer grant at the server's authorization server.
func (e *enterpriseHandler) exchange(ctx context.Context, d *discovery, idp, mcp *oauthex.ClientCredentials, fetch extauth.IDTokenFetcher) error {
	c := e.h.p.Config
	endpoint, err := e.h.expand(ctx, "idpTokenEndpoint", c.IDPTokenEndpoint, false)
	if err != nil {
		return err
	}
	id, err := fetch(ctx)
	if err != nil {
		return err
	}
	idToken, _ := id.Extra("id_token").(string)
	jag, err := oauthex.ExchangeToken(ctx, endpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG, Audience: d.asm.Issuer, Resource: d.resource, Scope: d.scopes,
		SubjectToken: idToken, SubjectTokenType: oauthex.TokenTypeIDToken,
	}, idp, e.h.p.Client)
	if err != nil {
		return fmt.Errorf("token exchange at the identity provider: %w", err)
	}
	e.h.p.Redact(jag.AccessToken)
	oc := &oauth2.Config{ClientID: mcp.ClientID, Endpoint: oauth2.Endpoint{TokenURL: d.asm.TokenEndpoint, AuthStyle: authStyle(d.asm.TokenEndpointAuthMethodsSupported)}}
	if mcp.ClientSecretAuth != nil {
		oc.ClientSecret = mcp.ClientSecretAuth.ClientSecret
	}
	tok, err := oc.Exchange(context.WithValue(ctx, oauth2.HTTPClient, e.h.p.Client), "",
		oauth2.SetAuthURLParam("grant_type", grantTypeJWTBearer), oauth2.SetAuthURLParam("assertion", jag.AccessToken))
	if err != nil {
		return fmt.Errorf("JWT bearer grant: %w", err)
	}
	e.mu.Lock()
	e.inner, e.static = nil, oauth2.StaticTokenSource(tok)
	e.mu.Unlock()
	return nil
}
