// Package streamhttp serves MCP's streamable HTTP transport, stateful, for
// switchboard's downstream endpoint, on switchboard's own session layer
// (package session).
//
// Each POST body is decoded once, by the same one-pass decoder the stdio
// connection uses, and its messages are handed to the session with the
// POST's own event stream: a request's answer, and everything the session
// sends about the request before it, go on that stream in order. What has
// no request (list changes, log messages outside a call) goes on the
// standalone GET stream. What a client sees is what the go-sdk's handler
// shows: the same status codes and checks, one session per Mcp-Session-Id
// bound to the principal that opened it, a standalone GET stream, DELETE,
// batches before 2025-06-18, and the SEP-2575 rejection of 2026-07-28
// requests that a stateful server owes. Two departures, both towards
// JSON-RPC: a body that is not JSON-RPC is answered with a JSON-RPC parse
// error (HTTP 400) instead of plain text, and an unknown method is answered
// with method-not-found on the call's stream. A 2025-11-25 POST stream
// that its client leaves is kept for a GET to take up (resume.go); the
// standalone stream is not resumable. Every write to a client has a deadline. Over HTTP/1 the
// standalone GET stream takes its connection over from net/http
// (rawstream.go): the same bytes on the wire, without the goroutine and
// buffers net/http keeps for a response in progress, and the connection
// closes with the stream.
package streamhttp
