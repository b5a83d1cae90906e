// Package reqbody reads a downstream request's body within a size limit and a
// deadline, so a client that sends its body slowly (or never finishes it)
// cannot hold a connection and a goroutine: the one read path of every
// downstream transport.
package reqbody
