package accesstoken

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Options configure a Verifier (config.ProtectedResource, resolved).
type Options struct {
	// Resource is switchboard's public base URL; an endpoint's resource
	// URL is it and the endpoint's path.
	Resource string
	Issuer   string
	JWKSURL  string   // "": the issuer's discovery document names it
	Audience []string // nil: the endpoint's resource URL, or Resource itself
	Scopes   []string // every token must carry these
	// SubjectClaim names the caller ("": "sub").
	SubjectClaim string
	// AgentClaim selects the agent view ("": none); Agents maps its
	// values to agent ids (nil: the value is the id).
	AgentClaim string
	Agents     map[string]string
	// Introspection checks opaque tokens (nil: only JWTs are accepted).
	Introspection *Introspection
	Client        *http.Client // nil: one with a 10s timeout
}

// Introspection is an RFC 7662 endpoint and switchboard's credentials.
type Introspection struct {
	URL, ClientID, ClientSecret string
	Cache                       time.Duration // 0: answers are not reused
}

// Identity is whom a valid token names.
type Identity struct {
	Issuer, Subject string
	// Agent is the agent id the agent claim selects ("" with HasAgent
	// false: the token names none).
	Agent    string
	HasAgent bool
}

// Holder is a digest of the issuer and subject: the same person whatever
// token they show, and no static token's digest (those hash the token).
func (id Identity) Holder() [sha256.Size]byte {
	return sha256.Sum256([]byte("oauth\x00" + id.Issuer + "\x00" + id.Subject))
}

// Error is why a token is refused, as RFC 6750 names it: invalid_token
// (401) or insufficient_scope (403, with the scopes needed).
type Error struct {
	Code        string
	Description string
	Scopes      []string
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

// Status is the HTTP status of the refusal.
func (e *Error) Status() int {
	if e.Code == "insufficient_scope" {
		return http.StatusForbidden
	}
	return http.StatusUnauthorized
}

func invalid(format string, a ...any) *Error {
	return &Error{Code: "invalid_token", Description: fmt.Sprintf(format, a...)}
}

// Verifier checks access tokens for one config generation.
type Verifier struct {
	o     Options
	keys  *keySet
	intro *introspector
	now   func() time.Time
}

// New makes a Verifier; it fetches nothing until the first token.
func New(o Options) *Verifier {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.SubjectClaim == "" {
		o.SubjectClaim = "sub"
	}
	v := &Verifier{o: o, now: time.Now}
	v.keys = newKeySet(o.Client, o.Issuer, o.JWKSURL)
	if o.Introspection != nil {
		v.intro = newIntrospector(o.Client, *o.Introspection)
	}
	return v
}

// Issuer is the authorization server the resource metadata names.
func (v *Verifier) Issuer() string { return v.o.Issuer }

// Scopes are the scopes every token must carry.
func (v *Verifier) Scopes() []string { return v.o.Scopes }

// algorithms are the signature algorithms accepted: asymmetric only (a
// symmetric one would let whoever knows a public key sign).
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// leeway is the clock skew tolerated on exp, nbf and iat.
const leeway = 30 * time.Second

// Verify checks token for resource (the URL of the endpoint it was shown
// to) and returns whom it names; the error is an *Error.
func (v *Verifier) Verify(ctx context.Context, token, resource string) (Identity, error) {
	claims, err := v.claims(ctx, token, resource)
	if err != nil {
		return Identity{}, err
	}
	if missing := missingScopes(v.o.Scopes, scopesOf(claims)); len(missing) > 0 {
		return Identity{}, &Error{Code: "insufficient_scope", Description: "the token lacks scope " + strings.Join(missing, " "), Scopes: v.o.Scopes}
	}
	sub, _ := claims[v.o.SubjectClaim].(string)
	if sub == "" {
		return Identity{}, invalid("the token has no %s claim", v.o.SubjectClaim)
	}
	id := Identity{Issuer: v.o.Issuer, Subject: sub}
	if v.o.AgentClaim != "" {
		if val, ok := claims[v.o.AgentClaim].(string); ok && val != "" {
			id.Agent, id.HasAgent = val, true
			if v.o.Agents != nil {
				id.Agent, id.HasAgent = v.o.Agents[val]
				if !id.HasAgent {
					return Identity{}, invalid("the token's %s %q selects no agent", v.o.AgentClaim, val)
				}
			}
		}
	}
	return id, nil
}

// claims are the checked claims of token: a JWT's, or an introspection
// answer's when the token is not a JWT and introspection is configured.
func (v *Verifier) claims(ctx context.Context, token, resource string) (map[string]any, error) {
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		if v.intro == nil {
			return nil, invalid("not a JWT signed with an accepted algorithm")
		}
		return v.intro.check(ctx, token, v.o.Issuer, v.audience(resource), v.now())
	}
	if len(tok.Headers) != 1 {
		return nil, invalid("want one signature")
	}
	key, err := v.keys.key(ctx, tok.Headers[0].KeyID, v.now())
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	all := map[string]any{}
	if err := tok.Claims(key, &std, &all); err != nil {
		return nil, invalid("bad signature")
	}
	exp := jwt.Expected{Issuer: v.o.Issuer, AnyAudience: v.audience(resource), Time: v.now()}
	if err := std.ValidateWithLeeway(exp, leeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return nil, invalid("issued by %q, not %q", std.Issuer, v.o.Issuer)
		case errors.Is(err, jwt.ErrInvalidAudience):
			return nil, invalid("the token's audience is not this resource")
		case errors.Is(err, jwt.ErrExpired):
			return nil, invalid("the token expired")
		case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
			return nil, invalid("the token is not valid yet")
		}
		return nil, invalid("%v", err)
	}
	if std.Expiry == nil {
		return nil, invalid("the token has no exp claim")
	}
	return all, nil
}

func (v *Verifier) audience(resource string) jwt.Audience {
	if len(v.o.Audience) > 0 {
		return v.o.Audience
	}
	return jwt.Audience{resource, strings.TrimSuffix(v.o.Resource, "/")}
}

// scopesOf reads the scope claim (a space-separated string) or scp (a
// string or a list).
func scopesOf(claims map[string]any) []string {
	for _, name := range []string{"scope", "scp"} {
		switch s := claims[name].(type) {
		case string:
			return strings.Fields(s)
		case []any:
			var out []string
			for _, x := range s {
				if str, ok := x.(string); ok {
					out = append(out, str)
				}
			}
			return out
		}
	}
	return nil
}

func missingScopes(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}
