// Package sanitize holds the pure, idempotent transforms applied to untrusted
// content from upstreams: wrapping tool results and resource text in a
// nonce-bound boundary, neutralising look-alike markers, detecting suspicious
// patterns, cleaning descriptions, enforcing size limits and hashing tool
// definitions for pinning.
//
// It is the one trust boundary of DESIGN §12: every message kind an
// upstream sends has one function here (ToolResult, Error, Tool,
// LogMessage, CreateMessage, …; the table is in boundary.go), and a test
// fails when a protocol field is neither handled nor listed as passed
// through.
//
// It performs no I/O, never logs content and imports no other package of this
// module; redaction arrives through the Redactor interface it declares. All
// functions are safe for concurrent use.
package sanitize
