// Package upstream runs configured MCP servers, one Handle each: stdio
// children, legacy SSE and streamable-HTTP endpoints. A Handle connects,
// lists the server's catalog through all pages, forwards calls, re-logs child
// stderr, and notices when the session ends.
//
// Supervision: a Handle moves through idle (lazy, not started) → starting →
// ready → restarting → failed or stopped. A failed start, or a lost session
// (the child exited, wrote a line over 16 MiB, the HTTP session vanished)
// that was ready less than 10 s and answered no call, counts as a failed
// start: retried after 1, 2, 4, 8, 16, then 30 s (±10 %), the
// maxRestarts+1st in a row is the last. The end of a healthy run (one that
// answered a call or stayed ready 10 s) starts the count over and is
// retried after 1 s (supervisor.ended). Each attempt initializes afresh and lists the
// catalog again. While restarting, the last catalog stays listed and calls
// fail fast with an UnavailableError; a failed stdio server withdraws its
// catalog and stays down, a remote one withdraws it and is retried every
// 30 s for as long as the Handle lives. A start that fails in a way trying
// again cannot change (ErrPermanent: the command is not there or may not be
// run, a reference does not resolve, the URL is not one) is not retried:
// stdio or remote, the server is failed at once (permanent.go).
//
// A remote server whose transport fails under a call has its session ended
// at once; calls fail with "server 'x' is unreachable, retrying in ~Ns",
// count for the breaker, and ask for a reconnect attempt now, at most one a
// second, outside the backoff (reconnect.go). A lazy server with an idle
// timeout is stopped after that long without a request and goes back to
// idle, its catalog still listed; the next call starts it again (idle.go).
//
// A start needs initialize and tools/list to succeed. A failing
// prompts/list, resources/list or resources/templates/list leaves the
// catalog partial instead (Catalog.Errors, Status.Catalog): the tools are
// served, each failure is logged at warn and counted, and the failing lists
// are asked for again on the server's next list_changed or after 5 s,
// doubling to 5 min, without a restart. Spec.SkipPrompts and
// Spec.SkipResources leave those lists out altogether.
//
// Calls go through a circuit breaker per Handle that counts transport
// failures and timeouts, never answers (isError results, JSON-RPC errors) or
// callers that went away.
//
// A stdio child speaks newline-delimited JSON-RPC through lineConn, which
// parses each line once in place with package wire (the SDK's ioConn decodes
// a message up to three times, with a fresh 32 KiB buffer each) and skips,
// with a warning, lines that are not JSON-RPC, such as banners some servers
// print to stdout. Every connection, stdio or remote, is driven by one
// client session of switchboard's own (client.go): one read loop, and a
// call whose notifications and server requests reach the caller's Sink
// before Call returns.
//
// Children run in their own process group. Stopping one closes its stdin,
// waits a second, sends SIGTERM to the group, waits five seconds, sends
// SIGKILL to the group and reaps it, so npx/uvx grandchildren go too.
//
// On Linux the switchboard binary starts each stdio child under a shim, a
// re-execution of itself (ShimCommand, RunShim) that passes stdio through
// untouched and ends as the server ended. It is the child subreaper of the
// server's tree and gets SIGTERM when switchboard dies, even by SIGKILL; it
// then kills the whole tree, grandchildren that left the process group
// included. On macOS and Windows there is no shim: the direct child is
// stopped as above, but a switchboard killed with SIGKILL leaves its
// children to exit on stdin EOF.
//
// Inside, a Handle composes parts that each own their state: the
// supervisor (supervise.go, idle.go, reconnect.go) runs the server and owns
// its state; the connector (connect.go) reaches it; the catalogStore
// (catalogstore.go) holds its catalog; the sessionSlot (session.go) holds
// the live session; and calls (call.go) forwards requests through the gate
// that counts them in flight (gate.go) and the breaker (breaker.go). Waits
// for a state, a session or a drain end on a channel closed when it comes,
// never on a poll.
//
// It imports no other package of this module and knows nothing of public
// names or policy; resolved secrets arrive through the Expander interface it
// declares. A Handle is safe for concurrent use and survives reloads while its
// Fingerprint is unchanged. Each Handle owns one supervisor goroutine, which
// Close stops and waits for.
package upstream
