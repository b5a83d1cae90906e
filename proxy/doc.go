// Package proxy is the composition root: it loads the config (whose schema
// lives in proxy/config), starts and stops the upstream handles, publishes
// what is served, and runs the listeners. The work itself is done below
// it: package view compiles snapshots and views, dispatch answers the
// sessions' requests, edge is the HTTP side toward clients, mrtr carries
// requests that ask for input across protocol eras, and session and the
// transports under internal/ speak the protocol.
//
// What is served at one moment is one generation (dispatch.Gen): a
// snapshot of the config and every view built from it. A reload (apply)
// or an upstream's catalog change (rebuild) publishes a new one whole
// (publish.go); each request holds one generation from its authentication
// to its answer, and handles a reload removes stop only after the last
// request of every older generation has finished. Reloads run on one
// goroutine; shutdown runs its numbered steps under one deadline.
//
// It may import every leaf (router, policy, sanitize, upstream, secrets);
// nothing but cmd/ and examples/ imports it.
package proxy
