// Package discovery ranks a view's tools against a natural-language
// request, for progressive tool discovery (switchboard_find_tools): a
// lexical ranker over each tool's name, title, description and parameter
// names and descriptions. It is pure Go, with no I/O and no model, and
// imports no package of this module. An Index is immutable once built and
// safe for concurrent use.
package discovery
