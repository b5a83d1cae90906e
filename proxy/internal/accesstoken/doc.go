// Package accesstoken checks the access tokens a deployment's identity
// provider issues for switchboard, as an OAuth 2.1 protected resource: a
// JWT against the issuer's signing keys (go-jose verifies the signature;
// the keys are cached and fetched again only for an unknown key id, at
// most once per keyRefetch), or an opaque token by RFC 7662 introspection
// (answers cached briefly, in a bounded table). A Verifier is built once
// per config generation and never fetches per request what it has.
package accesstoken
