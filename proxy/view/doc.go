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
// Every definition passes the trust boundary (package sanitize) here, and
// a pin check (PinChecker) decides whether a changed tool definition may be
// published, by the definition's hash. A listed tool's hash is computed
// once, and its route (cleaned definition, compiled schema) is built again
// only when what it is built with changes: its public name, its server's
// entry and settings, the secrets the redactor knows (toolMemo). A View
// never changes once built: requests read it without locks, and a change of
// catalog or config builds new ones.
package view
