// Package admin serves switchboard's admin listener: liveness (/healthz),
// readiness (/readyz), the status report (/status), Prometheus metrics
// (/metrics) and the reload trigger (POST /admin/reload). It owns the HTTP
// side of each; what they report comes from a Backend.
package admin
