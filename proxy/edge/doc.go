// Package edge is switchboard's HTTP side toward its clients. It mounts
// the MCP endpoints of every view (streamable HTTP and legacy SSE, /mcp
// and /agents/{id}/mcp), checks the Host header against allowedHosts and
// the bearer token against the generation's tokens, which pick the
// request's view (Principal), and mints and resumes the session IDs that
// let a replica take over another's session (continuity.go).
//
// Each POST holds the generation served when it arrived (dispatch.Serving
// Hold) from its authentication to its answer: a reload in between does
// not authenticate a request against one config and serve it from
// another. Long-lived GET streams hold none.
package edge
