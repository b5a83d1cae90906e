// Package dispatch answers downstream requests. A Dispatcher holds the
// session table and gives every session one handler per method
// (Methods): tools, prompts, resources, completion, subscriptions and, in
// discovery's search mode, switchboard's own tools. Each request acquires
// the generation served now (Serving, Gen) once, finds its session's view
// in it, and uses only that view: its routes, its snapshot's limits and
// policy, the upstream handles it names.
//
// A tools/call goes one way (forward): rate limit, strict argument
// decoding and validation against the upstream's schema, the upstream
// call in a child span, then the trust boundary (package sanitize) on
// everything that comes back, result and error alike; each call is
// counted, audited (AuditLog) and logged in one place. What upstreams
// send outside a call (log messages, resource updates, a per-client
// server's requests) is routed by the peer to the sessions that may see
// it, through the same boundary.
package dispatch
