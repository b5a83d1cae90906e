package sanitize

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxDescription is the cap, in runes, that Description applies when
// given zero.
const DefaultMaxDescription = 4096

// truncNote ends a description that Description cut.
const truncNote = "… [truncated]"

// Text removes from s what a reader cannot see but a model reads: C0 and
// C1 control characters other than '\n' and '\t', with every terminal
// control sequence they start taken out as a whole (see ctlSeqLen: CSI,
// OSC, DCS, APC, PM, SOS and the short ESC sequences, in their 7-bit and
// 8-bit forms), bidi controls and marks, zero-width and other format
// characters, the tag block, variation selectors other than U+FE0F (emoji
// presentation), the combining grapheme joiner and the Hangul fillers. A
// CR becomes '\n' (CRLF becomes one '\n'), so that neither words nor lines
// are glued together and no line can overwrite another on a terminal. Line
// and paragraph separators become '\n' and invalid UTF-8 becomes U+FFFD.
// Text is idempotent and returns s itself when there is nothing to remove.
func Text(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || textDrop(r) || r == 0x2028 || r == 0x2029 || r == 0x85 {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	noEnd := len(s) + 1
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0x1b:
				i += ctlSeqLen(s, i, &noEnd)
			case c == '\r':
				b.WriteByte('\n')
				if i++; i < len(s) && s[i] == '\n' {
					i++
				}
			case c < 0x20 && c != '\n' && c != '\t' || c == 0x7f:
				i++
			default:
				b.WriteByte(c)
				i++
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= 0x80 && r < 0xA0 && r != 0x85 {
			i += ctlSeqLen(s, i, &noEnd)
			continue
		}
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x2028 || r == 0x2029 || r == 0x85:
			b.WriteByte('\n')
		case textDrop(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// textDrop reports whether Text removes r.
func textDrop(r rune) bool {
	switch {
	case r == 0xFE0F:
		return false
	case r >= 0x80 && r < 0xA0: // C1 controls
		return true
	case r == 0x34F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x17B4, r == 0x17B5:
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF, r >= 0x180B && r <= 0x180F:
		return true // variation selectors
	case r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Description cleans a tool, prompt or resource description from server
// for the model: Text, then Neutralize, then the prefix "[MCP server: NAME] "
// (NAME cleaned the same way and put on one line) unless the text already
// starts with exactly that prefix, then a cap of limit runes in all (0 means
// DefaultMaxDescription), a cut text ending in "… [truncated]". The
// findings come from scanning the original desc. Description is
// idempotent: Description(s, Description(s, d, m), m) gives the same text.
func Description(server, desc string, limit int) (string, []Finding) {
	if limit <= 0 {
		limit = DefaultMaxDescription
	}
	findings := Scan(desc)
	for i := range findings {
		findings[i].Where = "description"
	}
	prefix := "[MCP server: " + strings.NewReplacer("\n", " ", "\t", " ").Replace(Neutralize(Text(server))) + "] "
	body := strings.TrimPrefix(Text(desc), prefix)
	out := capRunes(prefix+neutralizeAfter(prefix, body), limit)
	// The truncation note's letters can complete a marker that the cut
	// left unfinished ("…CONTEN" + "… [t"), so the capped text is checked
	// once more. Neutralising only shortens it, so the cap still holds.
	if hasMarker(out) {
		out = prefix + neutralizeAfter(prefix, strings.TrimPrefix(out, prefix))
	}
	return out, findings
}

// neutralizeAfter neutralises s as it reads after ctx, which holds no
// marker-like phrase itself: a phrase that starts in ctx and ends in s is
// replaced from the start of s on, so ctx+result holds no phrase and ctx is
// kept intact.
func neutralizeAfter(ctx, s string) string {
	full := ctx + s
	if !hasMarker(full) {
		return s
	}
	f := folder{keep: true, track: true}
	f.m.record = true
	f.fold(full)
	var b strings.Builder
	last := len(ctx)
	for _, end := range f.m.ends {
		start := max(f.spans[extendBack(f.out, matchStart(f.out, end))].start, last)
		b.WriteString(full[last:start])
		b.WriteString(neutralToken)
		last = max(f.spans[end-1].end, last)
	}
	b.WriteString(full[last:])
	return b.String()
}

// capRunes cuts s to at most limit runes, ending it in truncNote when that
// fits.
func capRunes(s string, limit int) string {
	if len(s) <= limit || utf8.RuneCountInString(s) <= limit {
		return s
	}
	keep := limit
	note := utf8.RuneCountInString(truncNote)
	if limit > note {
		keep = limit - note
	}
	i := 0
	for n := 0; n < keep; n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if limit > note {
		return s[:i] + truncNote
	}
	return s[:i]
}
