// Package oauth makes switchboard an OAuth 2.1 client of a remote MCP
// server: it builds the go-sdk's auth.OAuthHandler for a server's grant
// (authorization code with a pre-registered client, a Client ID Metadata
// Document or dynamic registration; client credentials with a secret or a
// private_key_jwt assertion; the RFC 7523 JWT bearer grant; enterprise-
// managed authorization; token exchange of the downstream caller's access
// token, RFC 8693) and keeps its tokens in a Store (a sealed file, memory,
// or Vault KV v2 through the KV interface proxy fills with the secrets
// package's Vault client, so that replicas share them), keyed by server
// and principal: one principal ("") for the grants whose
// token is switchboard's or one person's, one per caller for
// token_exchange (PerCaller, which finds the caller in the request's
// context: WithCaller). The upstream package's HTTP transport sets the
// Authorization header from the handler and calls its Authorize once on
// a 401 or 403.
//
// authorization_code binds its tokens to a P-256 key with DPoP (RFC 9449)
// when the authorization server offers ES256 (Config.DPoP): the handler's
// HTTP client adds a proof to its token requests, Transport sends the
// token with the DPoP scheme and a fresh proof, both answer a
// use_dpop_nonce refusal once with the server's nonce, and the key is
// kept in the Store beside the token bound to it.
//
// Consents holds the in-band authorization_code flows under way (a
// caller's consent asked for within its call): each is bound to the
// principal whose call opened it, started only by that caller at
// switchboard's start URL, completed only at the browser that started it,
// used once, and expired.
//
// Discovery, registration, PKCE, the iss check and the token requests are
// the go-sdk's (auth, auth/extauth, oauthex) and golang.org/x/oauth2's;
// this package only chooses among them, signs client assertions and
// DPoP proofs (golang-jwt) and keeps the tokens.
package oauth
