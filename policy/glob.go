package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxPatternLen is the longest pattern, in bytes, that ValidatePattern accepts.
const MaxPatternLen = 256

// ErrInvalidPattern is wrapped by every error ValidatePattern and Compile
// return for an unusable glob.
var ErrInvalidPattern = errors.New("invalid pattern")

// ValidatePattern reports why p is unusable as a glob, or nil if it is usable.
// A pattern must be non-empty, at most MaxPatternLen bytes, valid UTF-8, and
// free of control characters and bidirectional formatting characters.
// Only '*' and '?' are special; every other character, including '\\', '[' and
// ']', is literal.
//
// Invisible characters are rejected because a rule an operator cannot read
// is a rule nobody can review.
func ValidatePattern(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty", ErrInvalidPattern)
	}
	if len(p) > MaxPatternLen {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidPattern, len(p), MaxPatternLen)
	}
	for i, r := range p {
		switch {
		case r == utf8.RuneError:
			if _, w := utf8.DecodeRuneInString(p[i:]); w == 1 {
				return fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrInvalidPattern, i)
			}
		case isControl(r):
			return fmt.Errorf("%w: control character %U at byte %d", ErrInvalidPattern, r, i)
		case isBidi(r):
			return fmt.Errorf("%w: bidirectional formatting character %U at byte %d", ErrInvalidPattern, r, i)
		}
	}
	return nil
}

// isControl reports whether r is in Unicode category Cc (C0, DEL and C1).
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// isBidi reports whether r is a bidirectional formatting character
// (Unicode Bidi_Control), which can make a pattern read differently from
// how it matches.
func isBidi(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Match reports whether name matches pattern as a whole. In pattern, '*'
// matches any run of characters (including none) and '?' matches exactly one
// rune; an invalid UTF-8 byte in name counts as one rune. Every other
// character matches itself, byte for byte.
//
// Match reports false for a pattern that ValidatePattern rejects. It compiles
// the pattern on every call; use Compile for rules evaluated repeatedly.
func Match(pattern, name string) bool {
	if ValidatePattern(pattern) != nil {
		return false
	}
	g := compileGlob(pattern)
	return g.match(name)
}

// globKind selects a matching strategy. The special kinds are fast paths for
// the shapes rules usually take ("github_*", "*_delete", "*secret*").
type globKind uint8

const (
	kindExact    globKind = iota // no wildcard: lit == name
	kindAny                      // "*"
	kindPrefix                   // "lit*"
	kindSuffix                   // "*lit"
	kindContains                 // "*lit*"
	kindGeneral                  // anything else
)

// glob is a compiled pattern. It is immutable after compileGlob.
//
// A general pattern is split on runs of '*' into head, mid... and tail.
// With at least one '*', the head must match at the start of the name, the
// tail at its end, and each mid segment at its leftmost position after the
// previous one. Leftmost placement is always safe because each segment
// consumes a fixed number of runes, so an earlier start never ends later.
// This makes matching O(len(name) * len(pattern)) in the worst case, with no
// backtracking across stars.
type glob struct {
	kind   globKind
	lit    string // literal for the fast-path kinds
	star   bool   // general: the pattern contains at least one '*'
	head   segment
	mid    []segment
	tail   segment
	minLen int // fewest bytes a matching name can have
}

// segment is a star-free piece of a pattern. '?' in s matches one rune.
type segment struct {
	s     string
	q     bool   // s contains '?'
	first string // literal bytes before the first '?' (the search anchor)
}

func newSegment(s string) segment {
	i := strings.IndexByte(s, '?')
	if i < 0 {
		return segment{s: s, first: s}
	}
	return segment{s: s, q: true, first: s[:i]}
}

// minLen is the fewest bytes a match of sg can consume: each '?' takes at
// least one byte and each literal byte takes itself.
func (sg segment) minLen() int { return len(sg.s) }

// compileGlob compiles a pattern that ValidatePattern accepted.
func compileGlob(p string) glob {
	if !strings.ContainsAny(p, "*?") {
		return glob{kind: kindExact, lit: p, minLen: len(p)}
	}
	parts := splitStars(p)
	g := glob{kind: kindGeneral}
	if len(parts) == 1 {
		g.head = newSegment(parts[0])
		g.minLen = g.head.minLen()
		return g
	}
	g.star = true
	g.head = newSegment(parts[0])
	g.tail = newSegment(parts[len(parts)-1])
	for _, s := range parts[1 : len(parts)-1] {
		g.mid = append(g.mid, newSegment(s))
	}
	g.minLen = g.head.minLen() + g.tail.minLen()
	for _, m := range g.mid {
		g.minLen += m.minLen()
	}
	if g.head.q || g.tail.q || len(g.mid) > 1 || (len(g.mid) == 1 && g.mid[0].q) {
		return g
	}
	switch {
	case len(g.mid) == 1 && g.head.s == "" && g.tail.s == "":
		return glob{kind: kindContains, lit: g.mid[0].s, minLen: g.minLen}
	case len(g.mid) == 1:
		return g
	case g.head.s == "" && g.tail.s == "":
		return glob{kind: kindAny}
	case g.tail.s == "":
		return glob{kind: kindPrefix, lit: g.head.s, minLen: g.minLen}
	case g.head.s == "":
		return glob{kind: kindSuffix, lit: g.tail.s, minLen: g.minLen}
	}
	return g
}

// splitStars splits p on runs of '*'. The first and last elements are the
// (possibly empty) text before the first and after the last star; the
// elements between are non-empty.
func splitStars(p string) []string {
	var parts []string
	for {
		i := strings.IndexByte(p, '*')
		if i < 0 {
			return append(parts, p)
		}
		if i > 0 || len(parts) == 0 {
			parts = append(parts, p[:i])
		}
		p = strings.TrimLeft(p[i:], "*")
		if p == "" {
			return append(parts, "")
		}
	}
}

// match reports whether name matches g as a whole. It does not allocate.
func (g *glob) match(name string) bool {
	if len(name) < g.minLen {
		return false
	}
	switch g.kind {
	case kindExact:
		return name == g.lit
	case kindAny:
		return true
	case kindPrefix:
		return strings.HasPrefix(name, g.lit)
	case kindSuffix:
		return strings.HasSuffix(name, g.lit)
	case kindContains:
		return strings.Contains(name, g.lit)
	}
	if !g.star {
		n, ok := g.head.matchAt(name)
		return ok && n == len(name)
	}
	i, ok := g.head.matchAt(name)
	if !ok {
		return false
	}
	j, ok := g.tail.matchEnd(name)
	if !ok || j < i {
		return false
	}
	rest := name[i:j]
	for k := range g.mid {
		e := g.mid[k].index(rest)
		if e < 0 {
			return false
		}
		rest = rest[e:]
	}
	return true
}

// matchAt matches sg at the start of s and returns the number of bytes
// consumed.
func (sg *segment) matchAt(s string) (int, bool) {
	if !sg.q {
		return len(sg.s), strings.HasPrefix(s, sg.s)
	}
	j := 0
	for k := 0; k < len(sg.s); k++ {
		if j >= len(s) {
			return 0, false
		}
		if c := sg.s[k]; c == '?' {
			_, w := utf8.DecodeRuneInString(s[j:])
			j += w
		} else if s[j] != c {
			return 0, false
		} else {
			j++
		}
	}
	return j, true
}

// matchEnd matches sg at the end of s and returns where the match starts.
// Decoding backwards splits s into the same runes as decoding forwards: a
// multi-byte rune is only ever a valid sequence, which forward decoding also
// keeps whole.
func (sg *segment) matchEnd(s string) (int, bool) {
	if !sg.q {
		return len(s) - len(sg.s), strings.HasSuffix(s, sg.s)
	}
	j := len(s)
	for k := len(sg.s) - 1; k >= 0; k-- {
		if j <= 0 {
			return 0, false
		}
		if c := sg.s[k]; c == '?' {
			_, w := utf8.DecodeLastRuneInString(s[:j])
			j -= w
		} else if s[j-1] != c {
			return 0, false
		} else {
			j--
		}
	}
	return j, true
}

// index returns the end of the leftmost match of sg in s, or -1.
//
// Candidate starts are rune boundaries of s. A literal anchor found by
// strings.Index always starts on one, because a valid UTF-8 pattern never
// begins a character with a continuation byte.
func (sg *segment) index(s string) int {
	if !sg.q {
		if i := strings.Index(s, sg.s); i >= 0 {
			return i + len(sg.s)
		}
		return -1
	}
	if sg.first != "" {
		for off := 0; off <= len(s); {
			i := strings.Index(s[off:], sg.first)
			if i < 0 {
				return -1
			}
			i += off
			if n, ok := sg.matchAt(s[i:]); ok {
				return i + n
			}
			off = i + 1
		}
		return -1
	}
	for i := 0; i < len(s); {
		if n, ok := sg.matchAt(s[i:]); ok {
			return i + n
		}
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return -1
}
