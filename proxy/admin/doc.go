// Package admin serves switchboard's admin listener: liveness (/healthz),
// readiness (/readyz), the status report (/status), Prometheus metrics
// (/metrics), the reload and restart triggers (POST /admin/reload,
// /admin/restart/{server}) and the status page (/, page.go). It owns the
// HTTP side of each; what they report comes from a Backend.
package admin
