package dispatch

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Principal is who a downstream request is, once authenticated: the view
// it is served in and the config path of the token it showed ("" without
// one).
type Principal struct {
	View    string
	TokenID string
}

// Caller is what a call's requestState is bound to (mrtr.Caller): the
// view and the token.
func (pr Principal) Caller() string { return pr.View + "\x00" + pr.TokenID }

// Access is who may use one generation: the downstream tokens and the
// admin reload token, resolved from its config.
type Access struct {
	Tokens      *Tokens
	ReloadToken string
}

// Tokens holds the resolved downstream bearer tokens of one generation.
// Tokens are kept only as SHA-256 digests; comparison is constant time.
type Tokens struct {
	entries []TokenEntry
}

// TokenEntry is one downstream token.
type TokenEntry struct {
	digest [sha256.Size]byte
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

// Enabled reports whether any token is required.
func (t *Tokens) Enabled() bool { return t != nil && len(t.entries) > 0 }
