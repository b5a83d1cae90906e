// Package wire is MCP's JSON-RPC 2.0 codec as both sides of switchboard
// speak it: the upstream connections (stdio lines, streamable HTTP bodies
// and events) and the downstream transports (stdio, streamable HTTP, SSE).
// It decodes a message in one pass and agrees with the go-sdk's decoder on
// what is a message and what it says (the tests and fuzz targets check
// it); it writes messages as the go-sdk's encoder does.
package wire
