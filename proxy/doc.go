// Package proxy is the composition root: it loads the config (whose schema
// lives in proxy/config), builds immutable snapshots (router table, policy,
// sanitize options, upstream handles), serves the downstream MCP endpoints
// and the admin listener, and maps errors to MCP replies.
//
// It may import every leaf (router, policy, sanitize, upstream, secrets);
// nothing but cmd/ and examples/ imports it. Requests load the current
// snapshot once through an atomic pointer; reloads run on one goroutine.
package proxy
