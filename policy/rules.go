package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Rules is one layer as written in config: {"allow": [...], "deny": [...]}.
// Each entry is a glob (see Match) over the whole public name, or, in Deny
// only, a class of tools ("class:destructive", see ParseClass).
// If Allow is empty, every name not denied is allowed; Deny always wins.
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Validate reports every unusable pattern in r, each with its path
// ("allow[i]" or "deny[i]"), joined with errors.Join.
func (r Rules) Validate() error {
	var errs []error
	for i, p := range r.Allow {
		if strings.HasPrefix(p, ClassPrefix) {
			errs = append(errs, fmt.Errorf("allow[%d]: %w: %q: a class can only be denied (an allow by class would trust what a tool says of itself)", i, ErrInvalidPattern, p))
		} else if err := ValidatePattern(p); err != nil {
			errs = append(errs, fmt.Errorf("allow[%d]: %w", i, err))
		}
	}
	for i, p := range r.Deny {
		if _, ok, err := ParseClass(p); ok {
			if err != nil {
				errs = append(errs, fmt.Errorf("deny[%d]: %w", i, err))
			}
		} else if err := ValidatePattern(p); err != nil {
			errs = append(errs, fmt.Errorf("deny[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Layer is a compiled Rules. A nil *Layer allows everything.
// A Layer is immutable and safe for concurrent use.
type Layer struct {
	allow set
	deny  set
	// The same patterns lower-cased, for AllowsAny.
	foldAllow set
	foldDeny  set
	// denyClass holds the classes Deny names (AllowsTool).
	denyClass Class
}

// set is a compiled list of patterns. Patterns without wildcards are looked
// up in a map; the rest are tried in order.
type set struct {
	n     int // number of source patterns
	all   bool
	exact map[string]struct{}
	globs []glob
}

// Compile validates and compiles r. On error it returns every bad pattern,
// each named by its path ("allow[i]" or "deny[i]"), joined with errors.Join,
// and a nil Layer.
func Compile(r Rules) (*Layer, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var deny []string
	var classes Class
	for _, p := range r.Deny {
		if c, ok, _ := ParseClass(p); ok {
			classes |= c
		} else {
			deny = append(deny, p)
		}
	}
	return &Layer{
		allow: compileSet(r.Allow), deny: compileSet(deny),
		foldAllow: compileSet(lower(r.Allow)), foldDeny: compileSet(lower(deny)),
		denyClass: classes,
	}, nil
}

func lower(patterns []string) []string {
	out := make([]string, len(patterns))
	for i, p := range patterns {
		out[i] = strings.ToLower(p)
	}
	return out
}

func compileSet(patterns []string) set {
	s := set{n: len(patterns)}
	for _, p := range patterns {
		g := compileGlob(p)
		switch g.kind {
		case kindAny:
			s.all = true
		case kindExact:
			if s.exact == nil {
				s.exact = make(map[string]struct{})
			}
			s.exact[g.lit] = struct{}{}
		default:
			s.globs = append(s.globs, g)
		}
	}
	if s.all {
		// "*" subsumes every other pattern in the list.
		s.exact, s.globs = nil, nil
	}
	return s
}

// matches reports whether any pattern of s matches name.
func (s *set) matches(name string) bool {
	if s.all {
		return true
	}
	if _, ok := s.exact[name]; ok {
		return true
	}
	for i := range s.globs {
		if s.globs[i].match(name) {
			return true
		}
	}
	return false
}

// Allows reports whether name is visible through l: some allow pattern
// matches (or there are none) and no deny pattern matches. It does not
// allocate.
func (l *Layer) Allows(name string) bool {
	if l == nil {
		return true
	}
	if l.deny.n > 0 && l.deny.matches(name) {
		return false
	}
	return l.allow.n == 0 || l.allow.matches(name)
}

// AllowsAny judges one item known by several names: its public name and
// what it is before any renaming (see the package doc). Matching ignores
// case. A deny pattern that matches any of the names hides it; otherwise it
// is visible when there are no allow patterns or one matches any of the
// names. So no rename, cleaning, shortening or change of case can make a
// denied item visible. It allocates only for names with upper-case letters.
func (l *Layer) AllowsAny(names ...string) bool {
	if l == nil {
		return true
	}
	allowed := l.foldAllow.n == 0
	for _, name := range names {
		name = strings.ToLower(name)
		if l.foldDeny.n > 0 && l.foldDeny.matches(name) {
			return false
		}
		allowed = allowed || l.foldAllow.matches(name)
	}
	return allowed
}

// Empty reports whether l has no patterns, and so allows everything.
// A nil Layer is empty.
func (l *Layer) Empty() bool {
	return l == nil || (l.allow.n == 0 && l.deny.n == 0 && l.denyClass == 0)
}

// Chain is every layer that applies to one server in one view: global,
// agent, server (DESIGN §4). Nil entries are skipped, so an empty or nil Chain
// allows everything.
type Chain []*Layer

// Allows reports whether every layer of c allows name. It does not allocate.
func (c Chain) Allows(name string) bool {
	for _, l := range c {
		if !l.Allows(name) {
			return false
		}
	}
	return true
}

// AllowsAny reports whether every layer of c allows the item known by names
// (see Layer.AllowsAny).
func (c Chain) AllowsAny(names ...string) bool {
	for _, l := range c {
		if !l.AllowsAny(names...) {
			return false
		}
	}
	return true
}
