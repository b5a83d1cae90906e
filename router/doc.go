// Package router builds the public catalog: it turns each upstream's tool and
// prompt names into public names of the form mcp_<prefix>_<name>, resolves
// collisions deterministically, keeps lists sorted, and maps a public name back
// to its Target by table lookup (never by parsing the name).
//
// It is pure data: no I/O and no logging (Build returns its collisions for the
// caller to log), and it imports no other package of this module.
// A Table is immutable once built and safe for concurrent use.
package router
