package main

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

type config struct {
	Clients     []clientConfig `json:"clients"`
	Users       []userConfig   `json:"users"`
	TrustedIdPs []trustedIdP   `json:"trustedIdps"` // whose ID-JAGs the JWT bearer grant takes
}

type clientConfig struct {
	ID           string         `json:"id"`
	Secret       string         `json:"secret"`
	PublicKey    string         `json:"publicKey"`
	KeyID        string         `json:"keyId"`
	RedirectURIs []string       `json:"redirectURIs"`
	Grants       []string       `json:"grants"`
	TokenType    string         `json:"tokenType"`
	Audience     []string       `json:"audience"`
	Subject      string         `json:"subject"`
	Claims       map[string]any `json:"claims"`
	TTLSeconds   int            `json:"ttlSeconds"`
	// The ID tokens it gets (default 300 s; negative: issued expired).
	IDTokenTTLSeconds int `json:"idTokenTtlSeconds"`
	// As the identity provider's client: the authorization servers
	// (issuer → its client id there) it may get ID-JAGs for, and their
	// lifetime (default 300 s; negative: issued expired).
	IDJAG           map[string]string `json:"idJag"`
	IDJAGTTLSeconds int               `json:"idJagTtlSeconds"`
}

type userConfig struct {
	ID     string         `json:"id"`
	Claims map[string]any `json:"claims"`
}

// store is the example storage of zitadel/oidc (auth requests, codes,
// tokens, refresh tokens, revocation) with this fixture's clients, users,
// keys and claims in place of the example's fixed ones.
type store struct {
	*storage.Storage
	clients map[string]*client
	users   map[string]userConfig
	key     *rsa.PrivateKey

	mu      sync.Mutex
	tokens  map[string]issued    // access-token ID → what it was issued for
	refresh map[string]string    // client ID → the refresh token last issued to it
	grants  map[string]int       // grant type → token requests made with it
	used    map[string]time.Time // ID-JAG issuer and jti → its expiry
}

type issued struct {
	subject, clientID string
	audience, scopes  []string
	expires           time.Time
}

type users map[string]userConfig

func (u users) GetUserByID(id string) *storage.User {
	if _, ok := u[id]; !ok {
		return nil
	}
	return &storage.User{ID: id, Username: id, Email: id + "@example.test", EmailVerified: true}
}
func (u users) GetUserByUsername(name string) *storage.User { return u.GetUserByID(name) }
func (u users) ExampleClientID() string                     { return "" }

func newStore(cfg config, key *rsa.PrivateKey) (*store, error) {
	s := &store{clients: map[string]*client{}, users: map[string]userConfig{}, key: key, tokens: map[string]issued{}, refresh: map[string]string{}, grants: map[string]int{},
		used: map[string]time.Time{}}
	for _, u := range cfg.Users {
		s.users[u.ID] = u
	}
	for i, c := range cfg.Clients {
		if c.ID == "" {
			return nil, fmt.Errorf("clients[%d]: no id", i)
		}
		cl := &client{clientConfig: c}
		if c.PublicKey != "" {
			blk, _ := pem.Decode([]byte(c.PublicKey))
			if blk == nil {
				return nil, fmt.Errorf("clients[%d].publicKey: no PEM block", i)
			}
			pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("clients[%d].publicKey: %w", i, err)
			}
			cl.pub = pub
		}
		s.clients[c.ID] = cl
	}
	s.Storage = storage.NewStorageWithClients(users(s.users), nil)
	return s, nil
}

// approve completes the auth request id for the user its login_hint names.
func (s *store) approve(id string) error {
	ar, err := s.Storage.AuthRequestByID(context.Background(), id)
	if err != nil {
		return err
	}
	req := ar.(*storage.AuthRequest)
	if _, ok := s.users[req.LoginHint]; !ok {
		return fmt.Errorf("login_hint %q names no user", req.LoginHint)
	}
	req.UserID = req.LoginHint
	return s.Storage.AuthRequestDone(id)
}

func (s *store) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if c, ok := s.clients[id]; ok {
		return c, nil
	}
	return nil, errors.New("client not found")
}

func (s *store) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if c, ok := s.clients[id]; ok && c.Secret != "" && c.Secret == secret {
		return nil
	}
	return errors.New("invalid client")
}

func (s *store) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	if c, ok := s.clients[id]; ok && c.Secret != "" && c.Secret == secret {
		return c, nil
	}
	return nil, errors.New("invalid client")
}

// ccRequest is a client-credentials token request.
type ccRequest struct {
	c      *client
	scopes []string
}

func (r *ccRequest) GetSubject() string {
	if r.c.Subject != "" {
		return r.c.Subject
	}
	return r.c.ID
}
func (r *ccRequest) GetAudience() []string {
	if len(r.c.Audience) > 0 {
		return r.c.Audience
	}
	return []string{r.c.ID}
}
func (r *ccRequest) GetScopes() []string { return r.scopes }

func (s *store) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, errors.New("invalid client")
	}
	return &ccRequest{c: c, scopes: scopes}, nil
}

func (s *store) clientOf(r op.TokenRequest) string {
	switch r := r.(type) {
	case *ccRequest:
		return r.c.ID
	case *storage.AuthRequest:
		return r.ApplicationID
	case op.RefreshTokenRequest:
		return r.GetClientID()
	case op.TokenExchangeRequest:
		return r.GetClientID()
	case *oidc.JWTTokenRequest:
		return r.Issuer
	case *idJAGRequest:
		return r.clientID
	}
	return ""
}

func (s *store) note(id string, r op.TokenRequest, exp time.Time) time.Time {
	clientID := s.clientOf(r)
	if c, ok := s.clients[clientID]; ok && c.TTLSeconds != 0 {
		exp = time.Now().Add(time.Duration(c.TTLSeconds) * time.Second)
	}
	s.mu.Lock()
	s.tokens[id] = issued{subject: r.GetSubject(), clientID: clientID, audience: r.GetAudience(), scopes: r.GetScopes(), expires: exp}
	s.mu.Unlock()
	return exp
}

func (s *store) CreateAccessToken(ctx context.Context, r op.TokenRequest) (string, time.Time, error) {
	id, exp, err := s.Storage.CreateAccessToken(ctx, r)
	if err != nil {
		return "", time.Time{}, err
	}
	return id, s.note(id, r, exp), nil
}

func (s *store) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, current string) (string, string, time.Time, error) {
	id, refresh, exp, err := s.Storage.CreateAccessAndRefreshTokens(ctx, r, current)
	if err != nil {
		return "", "", time.Time{}, err
	}
	s.mu.Lock()
	s.refresh[s.clientOf(r)] = refresh
	s.mu.Unlock()
	return id, refresh, s.note(id, r, exp), nil
}

// lastRefresh is the refresh token last issued to clientID ("" none).
func (s *store) lastRefresh(clientID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refresh[clientID]
}

func (s *store) RevokeToken(ctx context.Context, token, userID, clientID string) *oidc.Error {
	s.mu.Lock()
	t, ok := s.tokens[token]
	if ok && t.clientID == clientID {
		delete(s.tokens, token)
	}
	s.mu.Unlock()
	if !ok {
		return s.Storage.RevokeToken(ctx, token, userID, clientID) // a refresh token
	}
	if t.clientID != clientID {
		return oidc.ErrInvalidClient().WithDescription("token was not issued for this client")
	}
	_ = s.Storage.RevokeToken(ctx, token, userID, clientID)
	return nil
}

// SetIntrospectionFromToken answers RFC 7662 for the access tokens this
// server issued: active while unexpired and unrevoked, to a client in
// the token's audience or the one it was issued to.
func (s *store) SetIntrospectionFromToken(_ context.Context, in *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || time.Now().After(t.expires) {
		return errors.New("token is not active")
	}
	if clientID != t.clientID && !contains(t.audience, clientID) {
		return errors.New("token is not for this client")
	}
	in.Subject = t.subject
	in.ClientID = t.clientID
	in.Scope = t.scopes
	in.Audience = t.audience
	in.Expiration = oidc.FromTime(t.expires)
	in.TokenType = oidc.BearerToken
	if cl := s.claims(t.subject, t.clientID); len(cl) > 0 {
		in.Claims = map[string]any{}
		for k, v := range cl {
			in.Claims[k] = v
		}
	}
	return nil
}

// claims are the user's or client's configured claims.
func (s *store) claims(subject, clientID string) map[string]any {
	if u, ok := s.users[subject]; ok {
		return u.Claims
	}
	if c, ok := s.clients[clientID]; ok {
		return c.Claims
	}
	return nil
}

func (s *store) privateClaims(subject, clientID string, scopes []string) map[string]any {
	out := map[string]any{}
	for k, v := range s.claims(subject, clientID) {
		out[k] = v
	}
	if len(scopes) > 0 {
		out["scope"] = strings.Join(scopes, " ")
	}
	return out
}

func (s *store) GetPrivateClaimsFromScopes(_ context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	return s.privateClaims(userID, clientID, scopes), nil
}

func (s *store) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) (map[string]any, error) {
	return s.privateClaims(r.GetSubject(), r.GetClientID(), r.GetScopes()), nil
}

func (s *store) SetUserinfoFromTokenExchangeRequest(ctx context.Context, ui *oidc.UserInfo, r op.TokenExchangeRequest) error {
	ui.Subject = r.GetSubject()
	return nil
}

// ValidateTokenExchangeRequest admits every exchange of a valid subject
// token, for the audience and scopes asked (default: an access token).
// An exchange for an access token that asks for offline_access gets a
// refresh token beside it: op issues one only for the refresh-token type,
// so the request is turned into that (the answer's access_token is still
// the access token; its issued_token_type says refresh_token).
func (s *store) ValidateTokenExchangeRequest(_ context.Context, r op.TokenExchangeRequest) error {
	if r.GetRequestedTokenType() == "" {
		r.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if r.GetRequestedTokenType() == oidc.AccessTokenType && contains(r.GetScopes(), oidc.ScopeOfflineAccess) {
		r.SetRequestedTokenType(oidc.RefreshTokenType)
	}
	r.SetCurrentScopes(r.GetScopes())
	return nil
}

// count notes one token request of grant type g.
func (s *store) count(g string) {
	s.mu.Lock()
	s.grants[g]++
	s.mu.Unlock()
}

// counts is how many token requests of each grant type were made.
func (s *store) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.grants))
	for g, n := range s.grants {
		out[g] = n
	}
	return out
}

// GetKeyByIDAndClientID is the client's public key, for private_key_jwt
// and the JWT-profile grant.
func (s *store) GetKeyByIDAndClientID(_ context.Context, keyID, clientID string) (*jose.JSONWebKey, error) {
	c, ok := s.clients[clientID]
	if !ok || c.pub == nil {
		return nil, errors.New("no key for this client")
	}
	if c.KeyID != "" && c.KeyID != keyID {
		return nil, errors.New("unknown key id")
	}
	return &jose.JSONWebKey{KeyID: keyID, Use: "sig", Key: c.pub}, nil
}

func (s *store) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}

// signingKey signs every token; its kid is fixed ("k1") so that servers
// started with the same --key are indistinguishable but for the issuer.
type signingKey struct{ k *rsa.PrivateKey }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.k }
func (k signingKey) ID() string                                  { return "k1" }

type publicKey struct{ k *rsa.PrivateKey }

func (k publicKey) ID() string                         { return "k1" }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.k.PublicKey }

func (s *store) SigningKey(context.Context) (op.SigningKey, error) { return signingKey{s.key}, nil }
func (s *store) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}
func (s *store) KeySet(context.Context) ([]op.Key, error) { return []op.Key{publicKey{s.key}}, nil }

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// client is one configured client.
type client struct {
	clientConfig
	pub any
}

var allGrants = []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken, oidc.GrantTypeClientCredentials, oidc.GrantTypeBearer, oidc.GrantTypeTokenExchange}

func (c *client) GetID() string                       { return c.ID }
func (c *client) RedirectURIs() []string              { return c.clientConfig.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod {
	switch {
	case c.Secret != "":
		return oidc.AuthMethodBasic
	case c.pub != nil:
		return oidc.AuthMethodPrivateKeyJWT
	}
	return oidc.AuthMethodNone
}
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	if len(c.Grants) == 0 {
		return allGrants
	}
	out := make([]oidc.GrantType, len(c.Grants))
	for i, g := range c.Grants {
		out[i] = oidc.GrantType(g)
	}
	return out
}
func (c *client) LoginURL(id string) string { return "/login?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType {
	if c.TokenType == "opaque" {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}
func (c *client) IDTokenLifetime() time.Duration {
	if c.IDTokenTTLSeconds != 0 {
		return time.Duration(c.IDTokenTTLSeconds) * time.Second
	}
	return 5 * time.Minute
}
func (c *client) DevMode() bool { return true }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) IsScopeAllowed(string) bool           { return true }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
