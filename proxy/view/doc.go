// Package view compiles what switchboard serves. A Snapshot is one config
// generation made immutable: its servers as the upstream package runs them
// (Plan, NewSnapshot) and, per downstream view (the default view and each
// agent), the servers it exposes under which policy (Spec). A View is
// one such view as one generation serves it, built by a Builder from the
// snapshot and the upstreams' catalogs as they are now: the tool routes
// (public name, published definition, compiled argument schema), prompts,
// resources and templates, the listing a tools/list shows (every tool, or
// in discovery's search mode switchboard's own tools and the index that
// finds the rest), the hashes that tell which lists changed, and the notes
// (collisions, flagged definitions) an operator sees in /status.
//
// Every definition passes the trust boundary (package sanitize) here, once
// per build, and a pin check (PinChecker) decides whether a changed tool
// definition may be published, by the definition's hash, which is computed
// once per listed tool (toolHashes). A View never changes once built: requests
// read it without locks, and a change of catalog or config builds new ones.
package view
