// Package session is switchboard's downstream message layer: one Session
// per connected client, holding the protocol state (version, client
// capabilities and info, log level, subscriptions, requests in flight and
// the requests switchboard sent the client), and dispatching each request to
// one handler per method.
//
// Transports (streamable HTTP, legacy SSE, stdio) decode each message once
// and hand it to Handle with the Stream its answer and everything about it
// go to; they know nothing of tools. The session answers the protocol's own
// methods (initialize, ping, logging/setLevel, server/discover) and the
// notifications (initialized, cancelled, roots/list_changed); every other
// method goes to the Methods table the caller gives it. A 2026-07-28
// request (modern.go) is one more way into the same table: it brings its
// version, capabilities and log level in _meta, needs no initialize, and
// leaves nothing in its session.
//
// A Session keeps two parts in types of their own: protocol (protocol.go)
// holds what initialize settled and the log level, and dispatches; outbound
// (outbound.go, outbox.go) holds the session's own stream, the
// notifications queued for it and switchboard's requests to the client.
//
// It imports no package of this module but the go-sdk's types. A Session is
// safe for concurrent use; it owns the goroutines it starts for requests
// (Go) and Close waits for them.
package session
