// Package e2e tests switchboard as a user runs it: the built binary, real
// child MCP servers (the Go fixture and the npm reference servers) and real
// clients (the go-sdk client, the MCP Inspector CLI, the conformance suite),
// over HTTP, stdio and signals.
//
// It imports no package of this module. TestMain builds the binaries once
// (with -race); each test writes its own config to a temporary directory and
// starts its own processes, which it stops by PID.
package e2e
