package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The Identity Assertion JWT Authorization Grant (ID-JAG), as the MCP
// enterprise-managed authorization extension uses it, on both of its
// sides:
//
//   - as the enterprise identity provider: a token exchange (RFC 8693)
//     whose subject_token is an ID token this server issued to the
//     requesting client and whose requested_token_type is the ID-JAG
//     answers with an ID-JAG JWT (typ oauth-id-jag+jwt; iss this server,
//     sub the person, aud the audience asked for, client_id the client's
//     id at that authorization server, resource, scope, jti, iat, exp);
//   - as the MCP server's authorization server: the JWT bearer grant
//     (RFC 7523) takes an assertion of that type signed by an identity
//     provider it trusts (its keys from the provider's JWKS), whose aud is
//     this server, whose client_id is the client that authenticates, not
//     expired and not used before, and issues an access token for the
//     person (aud: the ID-JAG's resource).
const (
	tokenTypeIDJAG = "urn:ietf:params:oauth:token-type:id-jag"
	typIDJAG       = "oauth-id-jag+jwt"
)

// trustedIdP is an identity provider whose ID-JAGs this server takes.
type trustedIdP struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwksUri"` // default: the jwks_uri of its OpenID discovery
}

// idJAGClaims are the claims of an ID-JAG.
type idJAGClaims struct {
	Issuer   string        `json:"iss"`
	Subject  string        `json:"sub"`
	Audience oidc.Audience `json:"aud"`
	ClientID string        `json:"client_id"`
	Resource string        `json:"resource,omitempty"`
	Scope    string        `json:"scope,omitempty"`
	JTI      string        `json:"jti"`
	IssuedAt int64         `json:"iat"`
	Expiry   int64         `json:"exp"`
}

// authenticate is the client of a token request, authenticated as op
// authenticates any (secret, basic or post; private_key_jwt), and
// allowed grant.
func (s *server) authenticate(ctx context.Context, h http.Header, form url.Values, grant oidc.GrantType) (*client, error) {
	cc := op.ClientCredentials{ClientID: form.Get("client_id"), ClientSecret: form.Get("client_secret"),
		ClientAssertion: form.Get("client_assertion"), ClientAssertionType: form.Get("client_assertion_type")}
	if id, secret, ok := (&http.Request{Header: h}).BasicAuth(); ok {
		id, err1 := url.QueryUnescape(id)
		secret, err2 := url.QueryUnescape(secret)
		if err := errors.Join(err1, err2); err != nil {
			return nil, oidc.ErrInvalidClient().WithDescription("invalid basic auth header")
		}
		cc.ClientID, cc.ClientSecret = id, secret
	}
	c, err := s.VerifyClient(ctx, &op.Request[op.ClientCredentials]{Header: h, Form: form, PostForm: form, Data: &cc})
	if err != nil {
		return nil, err
	}
	cl, ok := c.(*client)
	if !ok || !op.ValidateGrantType(cl, grant) {
		return nil, oidc.ErrUnauthorizedClient().WithDescription("grant %s not allowed to this client", grant)
	}
	return cl, nil
}

// exchangeIDJAG answers a token exchange for an ID-JAG (op's own
// handler refuses that requested_token_type). The audience must be an
// authorization server the client's idJag names; its id there is the
// ID-JAG's client_id.
func (s *server) exchangeIDJAG(w http.ResponseWriter, r *http.Request) {
	ctx := op.ContextWithIssuer(r.Context(), s.issuer)
	resp, err := s.idJAGFor(ctx, r.Header, r.PostForm)
	if err != nil {
		op.WriteError(w, r, err, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(resp)
}

func (s *server) idJAGFor(ctx context.Context, h http.Header, form url.Values) (map[string]any, error) {
	c, err := s.authenticate(ctx, h, form, oidc.GrantTypeTokenExchange)
	if err != nil {
		return nil, err
	}
	if t := form.Get("subject_token_type"); t != string(oidc.IDTokenType) {
		return nil, oidc.ErrInvalidRequest().WithDescription("an ID-JAG is issued for an ID token (subject_token_type %s), not %q", oidc.IDTokenType, t)
	}
	id, err := op.VerifyIDTokenHint[*oidc.IDTokenClaims](ctx, form.Get("subject_token"), s.Provider().IDTokenHintVerifier(ctx))
	switch {
	case errors.As(err, new(op.IDTokenHintExpiredError)):
		return nil, oidc.ErrInvalidGrant().WithDescription("subject_token: the ID token is expired")
	case err != nil:
		return nil, oidc.ErrInvalidGrant().WithDescription("subject_token: not an ID token of this identity provider: %v", err)
	case !contains(id.Audience, c.ID):
		return nil, oidc.ErrInvalidGrant().WithDescription("subject_token: the ID token was issued to %q, not to client %q", strings.Join(id.Audience, " "), c.ID)
	}
	aud := form["audience"]
	if len(aud) != 1 {
		return nil, oidc.ErrInvalidTarget().WithDescription("want one audience, the authorization server's issuer; got %d", len(aud))
	}
	clientID, ok := c.IDJAG[aud[0]]
	if !ok {
		return nil, oidc.ErrInvalidTarget().WithDescription("audience %q: client %q may not get an ID-JAG for it", aud[0], c.ID)
	}
	ttl := 5 * time.Minute
	if c.IDJAGTTLSeconds != 0 {
		ttl = time.Duration(c.IDJAGTTLSeconds) * time.Second
	}
	now := time.Now()
	jti := make([]byte, 16)
	rand.Read(jti)
	cl := idJAGClaims{Issuer: s.issuer, Subject: id.Subject, Audience: oidc.Audience{aud[0]}, ClientID: clientID,
		Resource: form.Get("resource"), Scope: form.Get("scope"), JTI: hex.EncodeToString(jti),
		IssuedAt: now.Unix(), Expiry: now.Add(ttl).Unix()}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: s.st.key},
		(&jose.SignerOptions{}).WithType(typIDJAG).WithHeader("kid", "k1"))
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	payload, _ := json.Marshal(cl)
	jws, err := signer.Sign(payload)
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	out := map[string]any{"access_token": tok, "issued_token_type": tokenTypeIDJAG, "token_type": "N_A",
		"expires_in": max(int64(ttl.Seconds()), 0)}
	if cl.Scope != "" {
		out["scope"] = cl.Scope
	}
	return out, nil
}

// JWTProfile takes an ID-JAG (by its typ) as the authorization server of
// an MCP server; any other assertion as op does (signed by a client's
// key, iss = sub = the client).
func (s *server) JWTProfile(ctx context.Context, r *op.Request[oidc.JWTProfileGrantRequest]) (*op.Response, error) {
	jws, err := jose.ParseSigned(r.Data.Assertion, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.PS256, jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 || jws.Signatures[0].Header.ExtraHeaders[jose.HeaderType] != typIDJAG {
		return s.LegacyServer.JWTProfile(ctx, r)
	}
	c, err := s.authenticate(ctx, r.Header, r.Form, oidc.GrantTypeBearer)
	if err != nil {
		return nil, err
	}
	cl, err := s.verifyIDJAG(ctx, jws)
	if err != nil {
		return nil, oidc.ErrInvalidGrant().WithDescription("ID-JAG: %v", err)
	}
	switch now := time.Now().Unix(); {
	case !contains(cl.Audience, op.IssuerFromContext(ctx)):
		return nil, oidc.ErrInvalidGrant().WithDescription("ID-JAG: issued for audience %q, not this authorization server", strings.Join(cl.Audience, " "))
	case cl.ClientID != c.ID:
		return nil, oidc.ErrInvalidGrant().WithDescription("ID-JAG: issued for client %q, not %q", cl.ClientID, c.ID)
	case cl.Expiry <= now:
		return nil, oidc.ErrInvalidGrant().WithDescription("ID-JAG: expired")
	case cl.Subject == "" || cl.JTI == "":
		return nil, oidc.ErrInvalidGrant().WithDescription("ID-JAG: no sub or jti")
	case !s.st.firstUse(cl.Issuer+" "+cl.JTI, time.Unix(cl.Expiry, 0)):
		return nil, oidc.ErrInvalidGrant().WithDescription("ID-JAG: already used (jti)")
	}
	req := &idJAGRequest{subject: cl.Subject, clientID: c.ID, audience: []string{c.ID}, scopes: strings.Fields(cl.Scope)}
	if cl.Resource != "" {
		req.audience = []string{cl.Resource}
	}
	tok, _, validity, err := op.CreateAccessToken(ctx, req, c.AccessTokenType(), s.Provider(), c, "")
	if err != nil {
		return nil, err
	}
	return op.NewResponse(&oidc.AccessTokenResponse{AccessToken: tok, TokenType: oidc.BearerToken,
		ExpiresIn: uint64(max(validity.Seconds(), 0)), Scope: req.scopes}), nil
}

// verifyIDJAG checks the signature of an ID-JAG by a trusted identity
// provider (the one its iss names) and returns its claims.
func (s *server) verifyIDJAG(ctx context.Context, jws *jose.JSONWebSignature) (*idJAGClaims, error) {
	var cl idJAGClaims
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &cl); err != nil {
		return nil, err
	}
	var idp *trustedIdP
	for i := range s.trusted {
		if s.trusted[i].Issuer == cl.Issuer {
			idp = &s.trusted[i]
		}
	}
	if idp == nil {
		return nil, fmt.Errorf("issuer %q is not a trusted identity provider", cl.Issuer)
	}
	keys, err := idpKeys(ctx, idp)
	if err != nil {
		return nil, fmt.Errorf("keys of %s: %w", idp.Issuer, err)
	}
	for _, k := range keys.Key(jws.Signatures[0].Header.KeyID) {
		if _, err := jws.Verify(k); err == nil {
			return &cl, nil
		}
	}
	return nil, fmt.Errorf("not signed by a key of %s", idp.Issuer)
}

// idpKeys fetches an identity provider's JWKS (each time: a rotated key
// is seen at once).
func idpKeys(ctx context.Context, idp *trustedIdP) (*jose.JSONWebKeySet, error) {
	uri := idp.JWKSURI
	if uri == "" {
		var meta struct {
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, strings.TrimSuffix(idp.Issuer, "/")+"/.well-known/openid-configuration", &meta); err != nil {
			return nil, err
		}
		uri = meta.JWKSURI
	}
	var ks jose.JSONWebKeySet
	if err := getJSON(ctx, uri, &ks); err != nil {
		return nil, err
	}
	return &ks, nil
}

func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// idJAGRequest is the token request of an accepted ID-JAG.
type idJAGRequest struct {
	subject, clientID string
	audience, scopes  []string
}

func (r *idJAGRequest) GetSubject() string    { return r.subject }
func (r *idJAGRequest) GetAudience() []string { return r.audience }
func (r *idJAGRequest) GetScopes() []string   { return r.scopes }

// firstUse notes key (an ID-JAG's issuer and jti) until exp and says
// whether it was not seen before.
func (s *store) firstUse(key string, exp time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, e := range s.used {
		if now.After(e) {
			delete(s.used, k)
		}
	}
	if _, ok := s.used[key]; ok {
		return false
	}
	s.used[key] = exp
	return true
}
