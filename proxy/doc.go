// Package proxy is the composition root: it loads the config (whose schema
// lives in proxy/config), builds immutable snapshots (router table, policy,
// sanitize options, upstream handles), serves the downstream MCP endpoints
// and the admin listener, and maps errors to MCP replies.
//
// It may import every leaf (router, policy, sanitize, upstream, secrets);
// nothing but cmd/ and examples/ imports it. What is served at one moment
// (the snapshot and every view's routes built from it) is one immutable
// value behind one atomic pointer (served.go): a reload or an upstream's
// catalog change publishes a new one whole, each request loads it once,
// and handles a reload removes stop only after the last request of every
// older generation has finished. Reloads run on one goroutine.
package proxy
