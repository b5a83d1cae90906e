// Package stdio serves one MCP session on newline-delimited JSON-RPC, the
// stdio transport (switchboard's serve --stdio), on switchboard's own
// session layer (package session).
//
// Each line is decoded once (package wire). A request runs on the
// session's goroutines, so calls overlap as they do on HTTP; everything the
// session writes goes out as one line each, in the order it writes them, so
// a call's notifications precede its answer. Unlike the SDK's stdio
// connection, a line that is not a JSON-RPC message does not end the
// session: it is answered with a JSON-RPC error with id null (parse error,
// or invalid request) as JSON-RPC 2.0 prescribes, and logged. A batch is
// answered with one batch under protocol versions before 2025-06-18, and
// refused from 2025-06-18 on, which has no batches.
package stdio
