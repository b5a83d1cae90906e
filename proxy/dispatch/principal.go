package dispatch

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Principal is who a downstream request is, once authenticated: the view
// it is served in, the config path of the token it showed ("" without
// one) and whom that token names.
type Principal struct {
	View string
	// TokenID is the token's config path, for logs and the audit trail
	// only: it moves when a reload adds or removes a token before it.
	TokenID string
	// Holder is what sessions and requestStates are bound to: a digest of
	// the token's value (zero without a token).
	Holder Holder
}

// Holder names whoever holds a token: the SHA-256 digest of its value,
// never its position in the config, so that a reload that removes a token
// hands its sessions to no other. It never leaves the process as it is: a
// session ID carries a keyed digest of it (package edge), a requestState
// an HMAC over it (package mrtr).
type Holder [sha256.Size]byte

// Same reports whether pr and o are the same caller: the same view and
// the same token value (a session is served only to the caller that
// opened it).
func (pr Principal) Same(o Principal) bool { return pr.View == o.View && pr.Holder == o.Holder }

// callerID is what counts and limits are keyed by: the view and the
// token's value, never its config path, so that a reload that moves a
// token in auth.tokens neither resets nor hands over what it holds.
type callerID struct {
	view   string
	holder Holder
}

func (pr Principal) id() callerID { return callerID{pr.View, pr.Holder} }

// Caller is what a call's requestState is bound to (mrtr.Caller): the
// view and the token's digest (fixed length, so no two callers share the
// string).
func (pr Principal) Caller() string { return string(pr.Holder[:]) + pr.View }

// Access is who may use one generation: the downstream tokens, the
// identity provider's access-token check and the admin reload token,
// resolved from its config.
type Access struct {
	Tokens      *Tokens
	ReloadToken string
	// OAuth checks the identity provider's access tokens (auth.oauth): an
	// *accesstoken.Verifier, built once per config, that the edge uses;
	// nil without auth.oauth. dispatch only carries it.
	OAuth any
}

// Tokens holds the resolved downstream bearer tokens of one generation.
// Tokens are kept only as SHA-256 digests; comparison is constant time.
type Tokens struct {
	entries []TokenEntry
}

// TokenEntry is one downstream token.
type TokenEntry struct {
	digest Holder
	ID     string // config path of the token, logged and audited instead of the token
	View   string // "" with Any: a global token; else the agent's view
	Any    bool
}

// Add admits token as the one at config path id, for view (any: every
// view).
func (t *Tokens) Add(token, id, view string, any bool) {
	t.entries = append(t.entries, TokenEntry{digest: sha256.Sum256([]byte(token)), ID: id, View: view, Any: any})
}

// Match returns the entry for token. Every entry is compared, so the time
// taken does not depend on which one matches.
func (t *Tokens) Match(token string) (TokenEntry, bool) {
	d := sha256.Sum256([]byte(token))
	var found TokenEntry
	ok := false
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 && !ok {
			found, ok = e, true
		}
	}
	return found, ok
}

// Holder is whom the token names (Principal.Holder).
func (e TokenEntry) Holder() Holder { return e.digest }

// Enabled reports whether any token is required.
func (t *Tokens) Enabled() bool { return t != nil && len(t.entries) > 0 }
