package secrets

import (
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A secret can be spread out so that no registered form appears whole: split
// across two lines, spaced out letter by letter, interleaved with zero-width
// characters. Read without its whitespace and invisible (format)
// characters, such a text holds the form again. spreadMatcher finds those,
// for forms of at least minSpreadLen bytes (a shorter one would match words
// that merely follow each other), and replaces the whole spread-out span.

// minSpreadLen is the shortest form looked for spread out.
const minSpreadLen = 8

// spreadMatcher holds the forms looked for spread out, and a filter of
// their first minSpreadLen bytes that a text passes in one walk without
// allocating: only a text with a candidate is squeezed and searched.
type spreadMatcher struct {
	forms  []string
	heads  [filterBits / 64]uint64 // bit h(head) set for each form's head
	hasAny bool
}

// filterBits sizes the heads filter: with a few hundred forms, a text of
// prose passes it with no candidate almost always.
const filterBits = 1 << 16

func newSpreadMatcher(forms []string) *spreadMatcher {
	m := &spreadMatcher{}
	for _, f := range forms {
		if len(f) >= minSpreadLen && !strings.ContainsFunc(f, squeezable) {
			m.forms = append(m.forms, f)
			h := headHash(f[:minSpreadLen])
			m.heads[h/64] |= 1 << (h % 64)
			m.hasAny = true
		}
	}
	if !m.hasAny {
		return nil
	}
	return m
}

// headHash hashes minSpreadLen bytes into the filter's range.
func headHash(b string) uint32 {
	var x uint64
	for i := range minSpreadLen {
		x = x<<8 | uint64(b[i])
	}
	x *= 0x9e3779b97f4a7c15
	return uint32(x >> (64 - 16))
}

// candidate reports whether str, read without its squeezable characters,
// has minSpreadLen bytes in a row that begin some form (or collide with
// one in the filter). Only texts where a squeezable character actually
// splits such a run matter, but telling that apart costs more than it saves.
func (m *spreadMatcher) candidate(str string) bool {
	var win uint64 // the last minSpreadLen squeezed bytes
	n := 0
	for i := 0; i < len(str); {
		c, w := str[i], 1
		if c >= utf8.RuneSelf {
			var r rune
			if r, w = utf8.DecodeRuneInString(str[i:]); squeezable(r) {
				i += w
				continue
			}
		} else if c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f' {
			i++
			continue
		}
		for _, b := range []byte(str[i : i+w]) {
			win = win<<8 | uint64(b)
			if n++; n >= minSpreadLen {
				h := uint32((win * 0x9e3779b97f4a7c15) >> (64 - 16))
				if m.heads[h/64]&(1<<(h%64)) != 0 {
					return true
				}
			}
		}
		i += w
	}
	return false
}

// squeezable reports whether r is left out when a text is read for spread
// out secrets.
// An invalid byte, or U+FFFD that stands for one, is left out too: it
// hides nothing from a reader who skips it.
func squeezable(r rune) bool {
	return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
}

// redact replaces every span of str that holds a form once read without
// its squeezable characters. It returns str itself when there is none.
func (m *spreadMatcher) redact(str string) string {
	spans := m.spans(str)
	if len(spans) == 0 {
		return str
	}
	var out strings.Builder
	last := 0
	for _, sp := range spans {
		out.WriteString(str[last:sp.from])
		out.WriteString(Redacted)
		last = sp.to
	}
	out.WriteString(str[last:])
	return out.String()
}

// span is a byte range [from, to) of a text.
type span struct{ from, to int }

// spans finds the ranges of str that hold a form once read without its
// squeezable characters, merged and in order.
func (m *spreadMatcher) spans(str string) []span {
	if m == nil || !m.candidate(str) {
		return nil
	}
	// The squeezed text, and for each of its bytes its offset in str.
	squeezed := strings.Map(func(r rune) rune {
		if squeezable(r) {
			return -1
		}
		return r
	}, str)
	at := make([]int, 0, len(squeezed))
	for i := 0; i < len(str); {
		r, w := utf8.DecodeRuneInString(str[i:])
		if !squeezable(r) { // an invalid byte is: w is r's length
			for k := range w {
				at = append(at, i+k)
			}
		}
		i += w
	}
	var found []span
	for _, f := range m.forms {
		for off := 0; ; {
			j := strings.Index(squeezed[off:], f)
			if j < 0 {
				break
			}
			a, b := off+j, off+j+len(f)
			found = append(found, span{at[a], at[b-1] + 1})
			off = a + 1
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool { return found[i].from < found[j].from })
	merged := found[:1]
	for _, sp := range found[1:] {
		if last := &merged[len(merged)-1]; sp.from <= last.to {
			last.to = max(last.to, sp.to)
		} else {
			merged = append(merged, sp)
		}
	}
	return merged
}

// RedactJoined redacts parts as the one text a reader makes of them, one
// after the other (the content blocks of one result): each part is
// redacted on its own, and a secret split across parts (a form of at least
// 8 bytes, see redact_spread.go) is replaced in every part it touches. It
// returns parts itself when nothing changed.
func (s *Set) RedactJoined(parts []string) []string {
	if s == nil {
		return parts
	}
	var out []string
	set := func(i int, v string) {
		if out == nil {
			out = slices.Clone(parts)
		}
		out[i] = v
	}
	for i, p := range parts {
		if r := s.Redact(p); r != p {
			set(i, r)
		}
	}
	cur := parts
	if out != nil {
		cur = out
	}
	m := s.spread.Load()
	if m == nil || len(cur) < 2 {
		if out == nil {
			return parts
		}
		return out
	}
	spans := m.spans(strings.Join(cur, ""))
	if len(spans) == 0 {
		if out == nil {
			return parts
		}
		return out
	}
	// Each part's share of each span is replaced.
	base := 0
	next := slices.Clone(cur)
	for i, p := range cur {
		end := base + len(p)
		var b strings.Builder
		last := 0
		for _, sp := range spans {
			from, to := max(sp.from, base)-base, min(sp.to, end)-base
			if from >= to {
				continue
			}
			b.WriteString(p[last:from])
			b.WriteString(Redacted)
			last = to
		}
		if last > 0 {
			b.WriteString(p[last:])
			next[i] = b.String()
		}
		base = end
	}
	return next
}
