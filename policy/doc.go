// Package policy compiles allow/deny glob rules once per config snapshot and
// evaluates them purely: a name is visible when every layer that applies
// passes, and within a layer deny always wins. An item known by several
// names (its public name and its names before renaming) is judged by all of
// them, in any letter case (Layer.AllowsAny). It also holds the call rate
// limiter.
//
// It performs no I/O and imports no other package of this module. Compiled
// rules are immutable and safe for concurrent use; Allows does not
// allocate.
package policy
