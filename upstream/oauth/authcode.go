package oauth

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// authorizationCode is the go-sdk's AuthorizationCodeHandler: a
// pre-registered client when clientId is set, else a Client ID Metadata
// Document when clientMetadataUrl is (dynamic registration when the
// authorization server takes none), else dynamic registration. A token
// kept in the store from an earlier consent is used, and refreshed, first.
func (h *Client) authorizationCode(ctx context.Context, e *Entry) (auth.OAuthHandler, error) {
	c := h.p.Config
	if h.dpop != nil {
		if err := h.dpop.use(e); err != nil {
			return nil, err
		}
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         c.Redirect(),
		Client:              h.p.Client,
		RequestRefreshToken: true,
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			h.p.Redact(oc.ClientSecret)
			meta := Entry{ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, TokenURL: oc.Endpoint.TokenURL,
				AuthStyle: int(oc.Endpoint.AuthStyle), Scopes: oc.Scopes}
			src := &savingSource{h: h, base: oauth2.ReuseTokenSourceWithExpiry(tok, oc.TokenSource(ctx, tok), earlyExpiry), meta: meta}
			if _, err := src.Token(); err != nil {
				return nil, err
			}
			return src, nil
		},
		AuthorizationCodeFetcher: h.fetch,
	}
	if len(c.Scopes) > 0 {
		scopes := c.Scopes
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	switch {
	case c.ClientID != "":
		cred := &oauthex.ClientCredentials{ClientID: c.ClientID}
		if c.ClientSecret != "" {
			secret, err := h.expand(ctx, "clientSecret", c.ClientSecret, true)
			if err != nil {
				return nil, err
			}
			cred.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		cfg.PreregisteredClient = cred
	case c.ClientMetadataURL != "":
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: c.ClientMetadataURL}
		cfg.DynamicClientRegistrationConfig = h.registration()
	default:
		cfg.DynamicClientRegistrationConfig = h.registration()
	}
	if e != nil && e.Token != nil && e.TokenURL != "" {
		oc := &oauth2.Config{ClientID: e.ClientID, ClientSecret: e.ClientSecret, Scopes: e.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: e.TokenURL, AuthStyle: oauth2.AuthStyle(e.AuthStyle)}}
		// Refreshes outlive the call that starts them: they run on a
		// context of their own that carries the client.
		rctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.p.Client)
		meta := *e
		meta.Token = nil
		cfg.InitialTokenSource = &savingSource{h: h, base: oauth2.ReuseTokenSourceWithExpiry(e.Token, oc.TokenSource(rctx, e.Token), earlyExpiry),
			meta: meta, last: e.Token.AccessToken}
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}

// registration is the metadata switchboard registers dynamically with.
func (h *Client) registration() *auth.DynamicClientRegistrationConfig {
	return &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
		RedirectURIs:  []string{h.p.Config.Redirect()},
		ClientName:    "switchboard",
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
	}}
}
