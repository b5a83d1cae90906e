// Package upstream runs configured MCP servers, one Handle each: stdio
// children, legacy SSE and streamable-HTTP endpoints. A Handle connects,
// lists the server's catalog through all pages, forwards calls, re-logs child
// stderr, and notices when the session ends.
//
// It imports no other package of this module and knows nothing of public
// names or policy; resolved secrets arrive through the Expander interface it
// declares. A Handle is safe for concurrent use and survives reloads while its
// Fingerprint is unchanged.
package upstream
