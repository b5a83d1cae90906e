// Package sse serves MCP's legacy HTTP+SSE transport (protocol 2024-11-05)
// on switchboard's own session layer (package session).
//
// A GET opens a session and its one event stream; the first event names
// the endpoint (the same path with ?sessionid=…) the client POSTs each
// message to. A POST is answered 202 Accepted at once; everything the
// session sends (answers, and the notifications and requests about them,
// in the order the session writes them) goes on the GET's stream. A
// session is bound to the principal that opened it: a POST from another
// is refused with 403, one naming no open session with 404. The session
// ends when its GET ends. Every write to a client has a deadline.
package sse
