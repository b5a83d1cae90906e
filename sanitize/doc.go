// Package sanitize holds the pure, idempotent transforms applied to untrusted
// content from upstreams: wrapping tool results and resource text in a
// nonce-bound boundary, neutralising look-alike markers, detecting suspicious
// patterns, cleaning descriptions, enforcing size limits and hashing tool
// definitions for pinning.
//
// It performs no I/O, never logs content and imports no other package of this
// module; redaction arrives through the Redactor interface it declares. All
// functions are safe for concurrent use.
package sanitize
