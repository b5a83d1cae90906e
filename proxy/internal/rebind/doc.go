// Package rebind guards the downstream MCP endpoints against DNS
// rebinding: on a loopback listener only a request naming a loopback Host
// is served, as the MCP security best practices ask of local servers.
package rebind
