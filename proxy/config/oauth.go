package config

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-switchboard/switchboard/secrets"
)

// The grants an oauth block may name (OAuth.Grant).
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	GrantJWTBearer         = "jwt_bearer"
	GrantEnterprise        = "enterprise"
	GrantTokenExchange     = "token_exchange"
)

var (
	grants           = []string{GrantAuthorizationCode, GrantClientCredentials, GrantJWTBearer, GrantEnterprise, GrantTokenExchange}
	signingAlgs      = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}
	dpopModes        = []string{"auto", "on", "off"}
	tokenStoreKinds  = []string{"file", "memory", "vault:MOUNT/PREFIX"}
	oauthSecretField = []string{"clientSecret", "privateKey", "assertion", "idpClientSecret", "idToken", "tokenStoreKey"}
)

// OAuth is how switchboard obtains the access token a remote server asks
// for (a server with an oauth block is an OAuth 2.1 protected resource and
// switchboard its client). Values that hold credentials may be secret://
// references; they are resolved when a token is requested, so rotated
// values are picked up (assertion is read afresh for every request).
type OAuth struct {
	// Grant is authorization_code (a person consents, with
	// `switchboard auth login NAME`), client_credentials (with
	// clientSecret, or privateKey for private_key_jwt), jwt_bearer (RFC
	// 7523 with assertion), enterprise (ID-JAG) or token_exchange (RFC
	// 8693: the downstream caller's access token, from auth.oauth,
	// exchanged for one per caller; the client authenticates as for
	// client_credentials).
	Grant  string   `json:"grant"`
	Scopes []string `json:"scopes,omitempty"`
	// ClientID and ClientSecret name a pre-registered client. Without
	// clientId, authorization_code registers with clientMetadataUrl (a
	// Client ID Metadata Document) when given, else dynamically.
	ClientID          string `json:"clientId,omitempty"`
	ClientSecret      string `json:"clientSecret,omitempty"`
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// PrivateKey (PEM) signs the private_key_jwt client assertion with
	// SigningAlgorithm (default ES256 for EC keys, RS256 for RSA).
	PrivateKey       string `json:"privateKey,omitempty"`
	SigningAlgorithm string `json:"signingAlgorithm,omitempty"`
	// Assertion is the JWT of the jwt_bearer grant, usually
	// secret://file/… (a projected service-account token).
	Assertion string `json:"assertion,omitempty"`
	// TokenStore keeps the tokens: "file" (the default, encrypted),
	// "memory" (lost at exit) or "vault:MOUNT/PREFIX" (Vault KV v2, one
	// secret per token under PREFIX in the KV v2 mount MOUNT, through the
	// Vault client of secret://vault references: replicas share them).
	// TokenStoreKey, when set, is the key (a secret:// reference) that
	// seals the file store, or each Vault entry before it is written;
	// without it the file store makes a key file beside it, and Vault
	// entries are stored as plain KV data, guarded by Vault's policy.
	TokenStore    string `json:"tokenStore,omitempty"`
	TokenStoreKey string `json:"tokenStoreKey,omitempty"`
	// RedirectURI is where the authorization server sends the person back
	// (authorization_code): a loopback http URL `auth login` listens on
	// (default http://127.0.0.1:8976/callback), or switchboard's own
	// callback (http on loopback, or https: …/oauth/callback), which lets
	// callers consent in band.
	RedirectURI string `json:"redirectUri,omitempty"`
	// DPoP (RFC 9449) binds authorization_code tokens to a key of
	// switchboard's: "auto" (the default) when the authorization server
	// offers ES256 (dpop_signing_alg_values_supported) or the resource
	// requires it (dpop_bound_access_tokens_required), "on" always (an
	// authorization server without ES256 fails the flow), "off" never.
	// The other grants send bearer tokens.
	DPoP string `json:"dpop,omitempty"`
	// PerCaller (authorization_code): each downstream caller links their
	// own account at the server, consenting in band at their first call,
	// and their calls carry their own token; requests made for no caller
	// (connecting, listing) use the token of `auth login`. It needs
	// callers with an identity (auth.tokens or auth.oauth), a
	// "protocol": "2026-07-28" http server, and redirectUri set to
	// switchboard's own callback.
	PerCaller bool `json:"perCaller,omitempty"`
	// The enterprise grant: the identity provider's issuer, switchboard's
	// client there, and the person's ID token (a secret:// reference).
	IDPIssuer       string `json:"idpIssuer,omitempty"`
	IDPClientID     string `json:"idpClientId,omitempty"`
	IDPClientSecret string `json:"idpClientSecret,omitempty"`
	IDToken         string `json:"idToken,omitempty"`
	// IDPTokenEndpoint, when set, is the identity provider's token
	// endpoint, not discovered from its metadata.
	IDPTokenEndpoint string `json:"idpTokenEndpoint,omitempty"`
}

// secretFields returns the fields that may hold secret references, by
// their JSON names, in oauthSecretField's order.
func (o *OAuth) secretFields() []string {
	return []string{o.ClientSecret, o.PrivateKey, o.Assertion, o.IDPClientSecret, o.IDToken, o.TokenStoreKey}
}

// oauth checks a server's oauth block at path (the server's path); tr is
// the server's transport.
func (v *validator) oauth(path, tr string, s *Server) {
	o := s.OAuth
	if o == nil {
		return
	}
	p := path + ".oauth"
	if tr == "stdio" {
		v.add(p, `not allowed for transport "stdio" (only a remote server is an OAuth protected resource)`)
		return
	}
	for k := range s.Headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			v.add(p, fmt.Sprintf("not allowed with a static %s header: the oauth block sets Authorization", joinKey(path+".headers", k)))
		}
	}
	if o.Grant == "" {
		v.add(p+".grant", "required: one of "+strings.Join(grants, ", "))
	} else {
		v.oneOf(p+".grant", o.Grant, grants)
	}
	v.oneOf(p+".signingAlgorithm", o.SigningAlgorithm, signingAlgs)
	v.oneOf(p+".dpop", o.DPoP, dpopModes)
	if o.DPoP == "on" && o.Grant != GrantAuthorizationCode {
		v.add(p+".dpop", fmt.Sprintf(`"on" works with grant %q only (grant %q sends bearer tokens)`, GrantAuthorizationCode, o.Grant))
	}
	if strings.HasPrefix(o.TokenStore, VaultStorePrefix) {
		v.vaultStore(p+".tokenStore", o.TokenStore)
	} else {
		v.oneOf(p+".tokenStore", o.TokenStore, tokenStoreKinds)
	}
	for i, f := range o.secretFields() {
		v.secretRefs(p+"."+oauthSecretField[i], f)
	}
	for i, sc := range o.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\"\\") {
			v.add(joinIndex(p+".scopes", i), fmt.Sprintf("%q is not a scope token (no spaces or quotes)", sc))
		}
	}
	if o.ClientMetadataURL != "" {
		if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			v.add(p+".clientMetadataUrl", fmt.Sprintf("want an https URL with a path (a Client ID Metadata Document), got %q", o.ClientMetadataURL))
		}
	}
	if o.RedirectURI != "" {
		u, err := url.Parse(o.RedirectURI)
		loopback := err == nil && u.Scheme == "http" && loopbackHost(u.Hostname()) && u.Port() != ""
		// switchboard's own public callback, for consent in band.
		public := err == nil && u.Scheme == "https" && u.Host != "" && u.Path == inBandCallback && u.RawQuery == "" && u.Fragment == ""
		if !loopback && !public {
			v.add(p+".redirectUri", fmt.Sprintf("want a loopback http URL with a port (http://127.0.0.1:PORT/path), or switchboard's own https://HOST%s, got %q", inBandCallback, o.RedirectURI))
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		v.add(p+".clientSecret", "needs clientId")
	}
	if o.ClientSecret != "" && o.PrivateKey != "" {
		v.add(p+".privateKey", "set clientSecret or privateKey, not both")
	}
	v.grantFields(p, o)
	if o.Grant == GrantTokenExchange {
		v.tokenExchange(path, tr, s)
	}
	if o.PerCaller {
		v.perCaller(path, tr, s, o)
	}
}

// perCaller checks what linked accounts (authorization_code, a token per
// caller) need: callers who can be told apart, a server that holds no
// session per client, and switchboard's own callback, where each caller's
// consent comes back.
func (v *validator) perCaller(path, tr string, s *Server, o *OAuth) {
	p := path + ".oauth.perCaller"
	switch {
	case o.Grant == GrantTokenExchange:
		v.add(p, `"token_exchange" is always per caller`)
		return
	case o.Grant != GrantAuthorizationCode:
		v.add(p, fmt.Sprintf("not used by grant %q (authorization_code only)", o.Grant))
		return
	}
	if !v.idp && !v.callers {
		v.add(p, "each caller links their own account: it needs callers with an identity (auth.tokens or auth.oauth)")
	}
	if tr != "http" || s.Protocol != "2026-07-28" {
		v.add(p, `each call carries its own caller's token: it needs "type": "http" and "protocol": "2026-07-28" `+
			`(a server of an earlier protocol binds its session to the one caller that opened it)`)
	}
	if u, err := url.Parse(o.RedirectURI); err != nil || u.Path != inBandCallback {
		v.add(p, fmt.Sprintf("each caller consents in band: it needs redirectUri set to switchboard's own …%s", inBandCallback))
	}
}

// tokenExchange checks what the token_exchange grant needs around its
// oauth block: callers with an identity provider's access tokens to
// exchange, and a server that holds no session per client, since each
// call carries its own caller's token.
func (v *validator) tokenExchange(path, tr string, s *Server) {
	p := path + ".oauth.grant"
	if !v.idp {
		v.add(p, `"token_exchange" exchanges the caller's access token: it needs auth.oauth (callers with the identity provider's tokens)`)
	}
	if tr != "http" || s.Protocol != "2026-07-28" {
		v.add(p, `"token_exchange" sends each call with its own caller's token: it needs "type": "http" and "protocol": "2026-07-28" `+
			`(a server of an earlier protocol binds its session to the one caller that opened it)`)
	}
}

// grantFields checks what each grant needs and refuses what it would not
// use.
func (v *validator) grantFields(p string, o *OAuth) {
	unused := func(field, val string) {
		if val != "" {
			v.add(p+"."+field, fmt.Sprintf("not used by grant %q", o.Grant))
		}
	}
	needs := func(field, val, why string) {
		if val == "" {
			v.add(p+"."+field, fmt.Sprintf("required for grant %q%s", o.Grant, why))
		}
	}
	enterpriseOnly := func() {
		unused("idpIssuer", o.IDPIssuer)
		unused("idpClientId", o.IDPClientID)
		unused("idpClientSecret", o.IDPClientSecret)
		unused("idToken", o.IDToken)
		unused("idpTokenEndpoint", o.IDPTokenEndpoint)
	}
	switch o.Grant {
	case GrantAuthorizationCode:
		unused("assertion", o.Assertion)
		unused("privateKey", o.PrivateKey)
		enterpriseOnly()
	case GrantClientCredentials, GrantTokenExchange:
		needs("clientId", o.ClientID, "")
		if o.ClientSecret == "" && o.PrivateKey == "" {
			v.add(p, fmt.Sprintf("grant %q needs clientSecret or privateKey", o.Grant))
		}
		unused("assertion", o.Assertion)
		unused("clientMetadataUrl", o.ClientMetadataURL)
		unused("redirectUri", o.RedirectURI)
		enterpriseOnly()
	case GrantJWTBearer:
		needs("assertion", o.Assertion, " (a JWT, e.g. secret://file/var/run/secrets/tokens/mcp)")
		unused("clientMetadataUrl", o.ClientMetadataURL)
		unused("redirectUri", o.RedirectURI)
		enterpriseOnly()
	case GrantEnterprise:
		needs("clientId", o.ClientID, " (the client registered at the server's authorization server)")
		needs("idpIssuer", o.IDPIssuer, "")
		needs("idpClientId", o.IDPClientID, "")
		needs("idToken", o.IDToken, " (the person's ID token from the identity provider)")
		unused("assertion", o.Assertion)
		unused("privateKey", o.PrivateKey)
		unused("clientMetadataUrl", o.ClientMetadataURL)
		unused("redirectUri", o.RedirectURI)
	}
	if o.SigningAlgorithm != "" && o.PrivateKey == "" {
		v.add(p+".signingAlgorithm", "only applies with privateKey")
	}
	if o.TokenStoreKey != "" && o.TokenStore == "memory" {
		v.add(p+".tokenStoreKey", `not used with tokenStore "memory"`)
	}
	for field, val := range map[string]string{"idpIssuer": o.IDPIssuer, "idpTokenEndpoint": o.IDPTokenEndpoint} {
		if val != "" && !secrets.HasRefs(val) {
			if u, err := url.Parse(val); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				v.add(p+"."+field, fmt.Sprintf("want an absolute http or https URL, got %q", val))
			}
		}
	}
}

// VaultStorePrefix starts a tokenStore that names a Vault KV v2 path.
const VaultStorePrefix = "vault:"

// vaultStore checks a "vault:MOUNT/PREFIX" token store: a mount and a
// prefix, each one or more non-empty path segments, none of them "." or
// "..", and nothing a URL path or a Vault path would read otherwise.
func (v *validator) vaultStore(path, val string) {
	want := "want vault:MOUNT/PREFIX (a KV v2 mount and a path in it, e.g. vault:secret/switchboard/tokens)"
	segs := strings.Split(strings.TrimPrefix(val, VaultStorePrefix), "/")
	if len(segs) < 2 {
		v.add(path, fmt.Sprintf("%q names no path in the mount: %s", val, want))
		return
	}
	for _, s := range segs {
		switch {
		case s == "":
			v.add(path, fmt.Sprintf("%q has an empty mount or path segment: %s", val, want))
			return
		case s == "." || s == "..":
			v.add(path, fmt.Sprintf("%q has a %q segment: %s", val, s, want))
			return
		case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(`%?#*+\"`, r) }):
			v.add(path, fmt.Sprintf("%q: a segment holds a space, a control character or one of %%?#*+\\\": %s", val, want))
			return
		}
	}
}

// inBandCallback is the path of switchboard's redirect URI for consent in
// band (upstream/oauth.CallbackPath).
const inBandCallback = "/oauth/callback"

func loopbackHost(h string) bool { return h == "127.0.0.1" || h == "::1" || h == "localhost" }
