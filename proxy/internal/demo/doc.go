// Package demo holds the two MCP servers of the embedded demo config,
// clock and notes, which `switchboard demo-server NAME` serves over stdio
// so that a first run without a config shows aggregation.
package demo
