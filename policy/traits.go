package policy

import (
	"fmt"
	"strings"
)

// ClassPrefix starts a deny entry that names a class of tools by what
// their annotations say they do ("class:destructive") rather than a glob
// over names. Public names never hold ':', so no such entry can be read as
// a name.
const ClassPrefix = "class:"

// Class is a set of tool classes, one bit each.
type Class uint8

// The classes a deny entry can name.
const (
	// ClassDestructive: the tool may destroy or overwrite (effective
	// destructiveHint true).
	ClassDestructive Class = 1 << iota
	// ClassOpenWorld: the tool reaches outside entities (effective
	// openWorldHint true).
	ClassOpenWorld
	// ClassWrite: the tool may change its environment (effective
	// readOnlyHint false).
	ClassWrite
)

var classNames = []struct {
	name string
	c    Class
}{{"destructive", ClassDestructive}, {"openWorld", ClassOpenWorld}, {"write", ClassWrite}}

// ParseClass parses a deny entry that starts with ClassPrefix; ok is false
// for any other entry.
func ParseClass(entry string) (c Class, ok bool, err error) {
	name, ok := strings.CutPrefix(entry, ClassPrefix)
	if !ok {
		return 0, false, nil
	}
	for _, n := range classNames {
		if n.name == name {
			return n.c, true, nil
		}
	}
	known := make([]string, len(classNames))
	for i, n := range classNames {
		known[i] = ClassPrefix + n.name
	}
	return 0, true, fmt.Errorf("%w: unknown class %q (known: %s)", ErrInvalidPattern, name, strings.Join(known, ", "))
}

// Hints are a tool's annotation hints as some source gives them; nil: the
// source does not say.
type Hints struct {
	ReadOnly    *bool
	Destructive *bool
	Idempotent  *bool
	OpenWorld   *bool
}

// Traits is what a tool does as far as policy may believe it.
type Traits struct {
	ReadOnly    bool
	Destructive bool
	OpenWorld   bool
}

// Believe is what policy may believe of a tool. override is the operator's
// word (config), trusted whatever the server; hints are the server's own,
// believed only when trusted. A hint neither believes takes the protocol's
// default, the worst case: not read-only, destructive, open-world. So an
// untrusted server's annotations never make a tool look safer than the
// defaults, and rules that hide what is not known to be safe fail closed.
// Destructive only means anything for a tool that is not read-only: a
// read-only tool is never destructive.
func Believe(override, hints Hints, trusted bool) Traits {
	pick := func(o, h *bool, def bool) bool {
		switch {
		case o != nil:
			return *o
		case trusted && h != nil:
			return *h
		}
		return def
	}
	t := Traits{
		ReadOnly:    pick(override.ReadOnly, hints.ReadOnly, false),
		Destructive: pick(override.Destructive, hints.Destructive, true),
		OpenWorld:   pick(override.OpenWorld, hints.OpenWorld, true),
	}
	if t.ReadOnly {
		t.Destructive = false
	}
	return t
}

// Classes is the set of classes t belongs to.
func (t Traits) Classes() Class {
	var c Class
	if t.Destructive {
		c |= ClassDestructive
	}
	if t.OpenWorld {
		c |= ClassOpenWorld
	}
	if !t.ReadOnly {
		c |= ClassWrite
	}
	return c
}

// AllowsTool judges a tool known by names whose believed traits are t: l
// allows it by name (AllowsAny) and denies none of its classes.
func (l *Layer) AllowsTool(t Traits, names ...string) bool {
	if l == nil {
		return true
	}
	return l.denyClass&t.Classes() == 0 && l.AllowsAny(names...)
}

// AllowsTool reports whether every layer of c allows the tool (see
// Layer.AllowsTool).
func (c Chain) AllowsTool(t Traits, names ...string) bool {
	for _, l := range c {
		if !l.AllowsTool(t, names...) {
			return false
		}
	}
	return true
}
