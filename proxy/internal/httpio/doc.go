// Package httpio is what the downstream HTTP transports (streamable HTTP
// and legacy SSE) share about a connection. Read reads a request's body
// within a size limit and a deadline, so a client that sends its body
// slowly (or never finishes it) cannot hold a connection and a goroutine:
// the one read path of every downstream transport. A Hold is a stream's
// hold on its response writer, written from goroutines other than its
// handler's: each write is bounded by a deadline, and a release ends a
// write blocked on a client that does not read at once.
package httpio
