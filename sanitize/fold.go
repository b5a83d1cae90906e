package sanitize

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The skeleton of a text is what a reader is likely to make of it once
// presentation tricks are undone. Marker neutralisation and Scan both match
// against the skeleton rather than the raw text, so that one set of rules
// covers every spelling of the same words:
//
//   - Invisible runes are dropped: format characters (zero-width space and
//     joiners, bidi controls, soft hyphen, word joiner, BOM), the tag block,
//     variation selectors, combining marks, Hangul fillers and control
//     characters other than tab, CR and LF.
//   - Compatibility forms fold to their base (NFKD: full-width ＥＮＤ,
//     mathematical 𝐄, circled Ⓔ, ligatures ﬀ), accents are dropped, and a
//     table maps common look-alikes (Cyrillic and Greek letters, small
//     capitals, ‹ « 〈 ⟨ ≪ and friends for '<') to ASCII.
//   - Escapes a model may read through are decoded once: HTML character
//     references (&lt; &#60; &#x3c;), backslash escapes (\u003c \x3c \074
//     \u{3c} \U0000003c) and percent-encoded ASCII (%3C).
//   - ASCII letters are lower-cased; every white-space rune becomes ' '
//     except line breaks, which become '\n'.
//
// A rune that survives none of these steps becomes the placeholder byte
// otherByte, which is neither a letter nor white space. The skeleton is
// therefore a byte string of ASCII plus otherByte.
const otherByte = 0x80

// foldStats counts invisible runes seen in the raw text (escapes do not
// count); Scan reports them as hidden Unicode.
type foldStats struct {
	tagChars int // U+E0000–U+E007F outside emoji tag sequences
	zwRun    int // the longest run of consecutive zero-width runes
	curZWRun int
	tagSeq   int // tag letters so far in an emoji tag sequence, or -1

	// Bidi controls. Overrides (LRO, RLO) always count; embeddings and
	// isolates are how RTL text is written, and count only when the text
	// has no RTL letter or one is still open at the end of its line
	// (Trojan Source reorders code that way).
	overrides  int
	bidiOpen   int // embeddings and isolates opened
	bidiDepth  int // opened and not yet closed
	openAt     int // raw offset of the outermost open one
	unbalanced bool
	rtl        bool // the text has a letter of an RTL script
	nonASCII   bool // the text has a rune outside ASCII
}

// bidi reports whether the bidi controls of the text hide something.
func (st *foldStats) bidi() bool {
	return st.overrides > 0 || st.unbalanced || st.bidiDepth > 0 || st.bidiOpen > 0 && !st.rtl
}

// span is the byte range of the raw text a skeleton byte came from. Several
// skeleton bytes may share one span (an expansion such as "ﬀ" or "&lt;").
type span struct{ start, end int }

// folder builds the skeleton of a text in one pass. Every skeleton byte is
// also fed to the marker matcher, so callers that need only to know whether
// a marker is present need not keep the skeleton at all.
type folder struct {
	keep  bool   // append skeleton bytes to out
	out   []byte // the skeleton, if keep
	spans []span // the raw span of each skeleton byte, if track
	track bool
	st    foldStats
	m     markerMatcher
	n     int // skeleton bytes emitted so far
	noEnd int // see ctlSeqLen
}

func (f *folder) emit(b byte, start, end int) {
	if f.keep {
		f.out = append(f.out, b)
	}
	if f.track {
		f.spans = append(f.spans, span{start, end})
	}
	f.m.feed(b, f.n)
	f.n++
}

// asciiSkeleton maps each ASCII byte to its skeleton byte: letters
// lower-cased, tab and friends to ' ', CR to '\n'. Zero marks a control
// character, which is dropped, and escapeStart the bytes that may open an
// escape.
var asciiSkeleton = func() (t [utf8.RuneSelf]byte) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = byte(b)
	}
	for b := 'A'; b <= 'Z'; b++ {
		t[b] = byte(b) + 'a' - 'A'
	}
	t['\n'], t['\r'] = '\n', '\n'
	t['\t'], t['\v'], t['\f'] = ' ', ' ', ' '
	t['&'], t['\\'], t['%'] = escapeStart, escapeStart, escapeStart
	return t
}()

const escapeStart = 1

// fold runs the folder over s. Plain ASCII takes an inlined fast path
// unless spans are tracked, the marker matcher reads a right-to-left
// override or an emoji tag sequence is open; those change only at a
// non-ASCII rune or in the slow path, where fast is worked out again.
func (f *folder) fold(s string) {
	f.noEnd = len(s) + 1
	f.st.tagSeq = -1
	fast := !f.track
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			f.st.curZWRun = 0
			if c := asciiSkeleton[b]; fast && c > escapeStart {
				if f.keep {
					f.out = append(f.out, c)
				}
				if letterOf[c] != 0 {
					m := &f.m
					if m.d = (m.d<<1 | 1) & phraseMask[c]; m.d&phraseDone != 0 {
						m.hit(f.n)
					}
				}
				f.n++
				i++
				continue
			}
			i += f.slowASCII(s, i)
		} else {
			i += f.nonASCII(s, i)
		}
		fast = !f.track && !f.m.rev && f.st.tagSeq < 0
	}
	if f.st.tagSeq >= 0 {
		f.st.endTagSeq()
	}
}

// slowASCII folds the ASCII byte at s[i] the slow way: an escape it
// starts, a control sequence, or any byte while spans are tracked or a
// right-to-left override or an emoji tag sequence is open. It returns the
// number of bytes used.
func (f *folder) slowASCII(s string, i int) int {
	b := s[i]
	if f.st.tagSeq >= 0 {
		f.st.endTagSeq()
	}
	if asciiSkeleton[b] == escapeStart {
		var r rune
		n := 0
		switch b {
		case '&':
			r, n = htmlEscape(s[i:])
		case '\\':
			r, n = backslashEscape(s[i:])
		case '%':
			r, n = percentEscape(s[i:])
		}
		if n > 0 {
			f.foldRune(r, i, i+n)
			return n
		}
	}
	if b == 0x1b {
		return ctlSeqLen(s, i, &f.noEnd)
	}
	f.foldASCII(b, i, i+1)
	return 1
}

// nonASCII folds the rune at s[i:] and returns its length, or that of the
// control sequence a C1 control starts.
func (f *folder) nonASCII(s string, i int) int {
	r, n := utf8.DecodeRuneInString(s[i:])
	if r >= 0x80 && r < 0xA0 && r != 0x85 {
		return ctlSeqLen(s, i, &f.noEnd)
	}
	f.count(s, i, r)
	f.foldRune(r, i, i+n)
	return n
}

// count updates the hidden-Unicode statistics for a raw rune at s[i:].
func (f *folder) count(s string, i int, r rune) {
	st := &f.st
	st.nonASCII = true
	if r >= 0xE0000 && r <= 0xE007F {
		st.tagRune(r)
	} else if st.tagSeq >= 0 {
		st.endTagSeq()
	}
	switch {
	case r == 0x1F3F4: // waving black flag, the base of subdivision flags
		st.tagSeq = 0
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		f.bidiControl(s, i, r)
	case r >= 0x0590 && r <= 0x08FF, r >= 0xFB1D && r <= 0xFDFF, r >= 0xFE70 && r <= 0xFEFF,
		r >= 0x10800 && r <= 0x10FFF, r >= 0x1E800 && r <= 0x1EFFF:
		st.rtl = true
	}
	if zeroWidth(r) {
		f.st.curZWRun++
		if f.st.curZWRun > f.st.zwRun {
			f.st.zwRun = f.st.curZWRun
		}
	} else {
		f.st.curZWRun = 0
	}
}

// tagRune counts a tag character. An emoji tag sequence (a black flag, two
// to six tag letters or digits, CANCEL TAG: the flags of England, Scotland
// and Wales) is how emoji are spelled and does not count; any other tag
// character spells invisible ASCII.
func (st *foldStats) tagRune(r rune) {
	switch {
	case st.tagSeq >= 0 && st.tagSeq < 6 && (r >= 0xE0030 && r <= 0xE0039 || r >= 0xE0061 && r <= 0xE007A):
		st.tagSeq++
	case st.tagSeq >= 2 && r == 0xE007F:
		st.tagSeq = -1
	default:
		st.tagChars += max(st.tagSeq, 0) + 1
		st.tagSeq = -1
	}
}

// endTagSeq ends an emoji tag sequence cut short: its tag letters count.
func (st *foldStats) endTagSeq() {
	st.tagChars += st.tagSeq
	st.tagSeq = -1
}

// bidiControl counts a bidi embedding, override or isolate, or the end of
// one, at s[i:], and tracks whether the marker matcher reads the letters
// after it right to left (an RLO until its PDF, PDI or the end of the
// line).
func (f *folder) bidiControl(s string, i int, r rune) {
	st := &f.st
	switch r {
	case 0x202D, 0x202E:
		st.overrides++
		f.m.setReverse(r == 0x202E)
		return
	case 0x202C, 0x2069:
		f.m.setReverse(false)
		if st.bidiDepth > 0 {
			if strings.IndexByte(s[st.openAt:i], '\n') >= 0 {
				st.unbalanced = true
			}
			st.bidiDepth--
		}
		return
	}
	st.bidiOpen++
	if st.bidiDepth == 0 {
		st.openAt = i
	}
	st.bidiDepth++
}

func (f *folder) foldASCII(b byte, start, end int) {
	switch c := asciiSkeleton[b]; c {
	case 0: // a control character: invisible
	case escapeStart: // not an escape after all
		f.emit(b, start, end)
	default:
		f.emit(c, start, end)
	}
}

func (f *folder) foldRune(r rune, start, end int) {
	if r < utf8.RuneSelf {
		f.foldASCII(byte(r), start, end)
		return
	}
	if r == 0x2028 || r == 0x2029 || r == 0x85 {
		f.emit('\n', start, end)
		return
	}
	if ignorable(r) {
		return
	}
	s, ok := confusables[r]
	if !ok {
		s, ok = confusables[unicode.ToLower(r)] // the table lists most letters in one case
	}
	if ok {
		for i := 0; i < len(s); i++ {
			f.emit(s[i], start, end)
		}
		return
	}
	if unicode.IsSpace(r) {
		f.emit(' ', start, end)
		return
	}
	var buf [utf8.UTFMax]byte
	d := norm.NFKD.Properties(buf[:utf8.EncodeRune(buf[:], r)]).Decomposition()
	if len(d) == 0 {
		f.emit(otherByte, start, end)
		return
	}
	// The runes of a full decomposition have none of their own, so this
	// recursion is one level deep.
	for len(d) > 0 {
		dr, n := utf8.DecodeRune(d)
		d = d[n:]
		f.foldRune(dr, start, end)
	}
}

// ignorable reports whether r is invisible or merely modifies its neighbour,
// so that a reader skips it: format characters (Cf), combining marks (Mn,
// Me, which include the variation selectors), C1 controls, the tag block and
// the Hangul and Khmer fillers.
func ignorable(r rune) bool {
	switch {
	case r < 0xA0:
		return r >= 0x80 // C1 controls
	case r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x3164, r == 0xFFA0:
		return true
	case r >= 0xE0000 && r <= 0xE0FFF:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me)
}

// zeroWidth reports whether r renders as nothing at all. Runs of these are
// how text is smuggled past a human reader ("ASCII smuggling" and variation
// selector encodings); bidi controls and tag characters are counted apart.
func zeroWidth(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x2060 && r <= 0x2064, r >= 0x206A && r <= 0x206F:
		return true
	case r == 0xAD, r == 0x34F, r == 0x61C, r == 0x115F, r == 0x1160, r == 0x17B4,
		r == 0x17B5, r == 0x180E, r == 0x3164, r == 0xFEFF, r == 0xFFA0:
		return true
	case r >= 0x180B && r <= 0x180F:
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		return true // variation selectors
	}
	return false
}

// htmlEscape decodes an HTML character reference at the start of s: a
// numeric one (&#60; &#x3C;, the ';' optional as browsers accept) or a named
// one from htmlNames. It returns the rune and the number of bytes used, or
// n == 0 if s does not start with a reference.
func htmlEscape(s string) (rune, int) {
	if len(s) < 3 {
		return 0, 0
	}
	if s[1] == '#' {
		i, base := 2, uint32(10)
		if s[2] == 'x' || s[2] == 'X' {
			i, base = 3, 16
		}
		r, n := parseDigits(s[i:], base, 7)
		if n == 0 || r > unicode.MaxRune {
			return 0, 0
		}
		i += n
		if i < len(s) && s[i] == ';' {
			i++
		}
		return rune(r), i
	}
	// Named references: letters then ';'. The longest name we know is 8 bytes.
	end := 1
	for end < len(s) && end <= 9 && isASCIILetter(s[end]) {
		end++
	}
	if end == 1 {
		return 0, 0
	}
	name := s[1:end]
	if end < len(s) && s[end] == ';' {
		if r, ok := htmlNames[name]; ok {
			return r, end + 1
		}
		return 0, 0
	}
	// A few legacy names are recognised without the ';'.
	for _, legacy := range [...]string{"lt", "gt", "LT", "GT", "amp", "AMP", "quot", "QUOT", "nbsp"} {
		if len(name) >= len(legacy) && name[:len(legacy)] == legacy {
			return htmlNames[legacy], 1 + len(legacy)
		}
	}
	return 0, 0
}

// htmlNames are the named character references that matter for reading
// markers and instructions: brackets, quotes, separators and invisibles.
var htmlNames = map[string]rune{
	"lt": '<', "LT": '<', "gt": '>', "GT": '>', "amp": '&', "AMP": '&',
	"quot": '"', "QUOT": '"', "apos": '\'', "nbsp": 0xA0, "lowbar": '_',
	"UnderBar": '_', "hyphen": 0x2010, "dash": 0x2010, "ndash": 0x2013,
	"mdash": 0x2014, "minus": 0x2212, "lsaquo": 0x2039, "rsaquo": 0x203A,
	"laquo": 0xAB, "raquo": 0xBB, "lang": 0x27E8, "rang": 0x27E9,
	"langle": 0x27E8, "rangle": 0x27E9, "Lt": 0x226A, "Gt": 0x226B,
	"zwj": 0x200D, "zwnj": 0x200C, "shy": 0xAD, "NewLine": '\n', "Tab": '\t',
	"colon": ':', "lsqb": '[', "rsqb": ']', "lbrack": '[', "rbrack": ']',
	"verbar": '|', "vert": '|', "sol": '/', "bsol": '\\', "num": '#',
	"excl": '!', "period": '.', "lpar": '(', "rpar": ')', "equals": '=',
	"ensp": 0x2002, "emsp": 0x2003, "thinsp": 0x2009,
}

// backslashEscape decodes \uXXXX, \u{X…}, \UXXXXXXXX, \xXX, \x{X…} and
// three-digit octal \NNN at the start of s.
func backslashEscape(s string) (rune, int) {
	if len(s) < 2 {
		return 0, 0
	}
	var v uint32
	var n int
	switch s[1] {
	case 'u', 'x':
		if len(s) > 2 && s[2] == '{' {
			v, n = parseDigits(s[3:], 16, 6)
			if n == 0 || 3+n >= len(s) || s[3+n] != '}' {
				return 0, 0
			}
			n += 4
			break
		}
		want := 4
		if s[1] == 'x' {
			want = 2
		}
		if v, n = parseDigits(s[2:], 16, want); n != want {
			return 0, 0
		}
		n += 2
	case 'U':
		if v, n = parseDigits(s[2:], 16, 8); n != 8 {
			return 0, 0
		}
		n += 2
	case '0', '1', '2', '3':
		if v, n = parseDigits(s[1:], 8, 3); n != 3 {
			return 0, 0
		}
		n++
	default:
		return 0, 0
	}
	if v > unicode.MaxRune {
		return 0, 0
	}
	return rune(v), n
}

// percentEscape decodes %XX when it encodes an ASCII byte.
func percentEscape(s string) (rune, int) {
	v, n := parseDigits(s[1:], 16, 2)
	if n != 2 || v >= utf8.RuneSelf {
		return 0, 0
	}
	return rune(v), 3
}

// parseDigits parses up to max digits of the given base at the start of s.
func parseDigits(s string, base uint32, max int) (uint32, int) {
	var v uint32
	n := 0
	for n < len(s) && n < max {
		d := digitVal(s[n])
		if d >= base {
			break
		}
		v = v*base + d
		n++
	}
	return v, n
}

func digitVal(b byte) uint32 {
	switch {
	case '0' <= b && b <= '9':
		return uint32(b - '0')
	case 'a' <= b && b <= 'f':
		return uint32(b-'a') + 10
	case 'A' <= b && b <= 'F':
		return uint32(b-'A') + 10
	}
	return 99
}

func isASCIILetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

// confusables maps look-alike runes that NFKD leaves alone to the ASCII a
// reader takes them for. Brackets map to '<' and '>' so that no variant of a
// boundary marker's "<<<" survives folding.
var confusables = buildConfusables()

func buildConfusables() map[rune]string {
	m := map[rune]string{
		// Angle brackets and arrows read as '<' or '>'.
		'‹': "<", '›': ">", '«': "<<", '»': ">>", '〈': "<", '〉': ">",
		'⟨': "<", '⟩': ">", '《': "<<", '》': ">>", '❮': "<", '❯': ">",
		'❬': "<", '❭': ">", '❰': "<", '❱': ">", '⧼': "<", '⧽': ">",
		'˂': "<", '˃': ">", 'ᐸ': "<", 'ᐳ': ">", '≪': "<<", '≫': ">>",
		'⋘': "<<<", '⋙': ">>>", '⫷': "<<<", '⫸': ">>>", '⋖': "<", '⋗': ">",
		'≺': "<", '≻': ">", '⟪': "<<", '⟫': ">>", '⦉': "<", '⦊': ">",
		'⦑': "<", '⦒': ">", '⸦': "<", '⸧': ">", '‐': "-", '‑': "-",
		'‒': "-", '–': "-", '—': "-", '―': "-", '−': "-", '⁃': "-",
		'＿': "_", '‗': "_", 'ǀ': "l", '∣': "|", '│': "|", '｜': "|",
		'ı': "i", 'ȷ': "j", 'ſ': "s", 'ℓ': "l", '€': "e", '∊': "e",
		'ɑ': "a", 'ɡ': "g", 'ɩ': "i", 'ɪ': "i", 'ʏ': "y", 'ʜ': "h",
		'ɢ': "g", 'ʙ': "b", 'ɴ': "n", 'ʀ': "r", 'ʟ': "l", 'ɛ': "e",
		'ɔ': "o", 'ʋ': "u", 'ɾ': "r", 'ɸ': "o", 'ʊ': "u",
		'ø': "o", 'Ø': "o", 'đ': "d", 'Đ': "d", 'ł': "l", 'Ł': "l",
		'ħ': "h", 'Ħ': "h", 'ŧ': "t", 'Ŧ': "t", 'ƀ': "b", 'ɨ': "i",
		'ʉ': "u", 'ɇ': "e", 'ß': "ss", 'æ': "ae", 'Æ': "ae", 'œ': "oe",
		'Œ': "oe", 'þ': "p", 'ð': "d",
	}
	// Latin small capitals (U+1D00 block).
	for r, s := range map[rune]string{
		0x1D00: "a", 0x1D04: "c", 0x1D05: "d", 0x1D07: "e", 0x1D0A: "j",
		0x1D0B: "k", 0x1D0D: "m", 0x1D0F: "o", 0x1D18: "p", 0x1D1B: "t",
		0x1D1C: "u", 0x1D20: "v", 0x1D21: "w", 0x1D22: "z", 0xA731: "s",
		0xA730: "f", 0x1D19: "r", 0x1D0C: "l",
	} {
		m[r] = s
	}
	// Cyrillic, Greek, Armenian, Cherokee and Lisu look-alikes.
	pairs := []struct{ from, to string }{
		{"аеорсухѕіјԁһӏԛԝвкмнтгпґ", "aeopcyxsijdhlqwbkmhtrnr"},
		{"АВЕКМНОРСТХУЅІЈԀҮ", "abekmhopctxysijdy"},
		{"αβεικνορτυχωϲϳℽ", "abeikvoptuxwcjy"},
		{"ΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹ", "abezhikmnoptyxc"},
		{"օսոհզցԼՏ", "ounhqgls"},
		{"ᎪᏴᏟᎠᎬᏀᎻᏆᎫᏦᏞᎷᏁᎾᏢᏒᏚᎢᏙᏔᏃ", "abcdeghijklmnoprstvwz"},
		{"ꓮꓐꓚꓓꓰꓝꓖꓧꓲꓙꓗꓡꓟꓠꓳꓑꓣꓢꓔꓴꓦꓪꓫꓬꓜ", "abcdefghijklmnoprstuvwxyz"},
	}
	for _, p := range pairs {
		to := []rune(p.to)
		i := 0
		for _, r := range p.from {
			m[r] = string(unicode.ToLower(to[i]))
			i++
		}
	}
	// Enclosed letters NFKD leaves alone: negative circled and squared
	// (🅐 🅰), and regional indicators (🇦), which render as letters when
	// unpaired.
	for i := rune(0); i < 26; i++ {
		l := string(rune('a' + i))
		m[0x1F150+i] = l
		m[0x1F170+i] = l
		m[0x1F1E6+i] = l
	}
	return m
}
