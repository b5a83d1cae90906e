// Package sessionid mints and opens self-describing session IDs: what a
// streamable-HTTP session was opened with (its protocol version, the
// client's capabilities and name, the view, a keyed digest of the token
// it is bound to, and when it was opened),
// sealed with AES-256-GCM under a deployment key, behind the name of the
// replica that holds the session's streams:
//
//	<replica>.<base64url(nonce ‖ ciphertext ‖ tag)>
//
// The replica's name is in the clear so an L7 proxy can route on it; it
// is authenticated as the AEAD's additional data, so it cannot be moved to
// another token. Everything else is sealed: a client learns nothing from
// its ID, and an ID that was altered, or sealed under another key, does
// not open. Any replica with the key resumes a session from its ID alone.
package sessionid
