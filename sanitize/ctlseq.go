package sanitize

// Terminal control sequences (ECMA-48). A terminal acts on them and shows
// none of their bytes: a sequence can clear the screen, retitle the window,
// make a hyperlink (OSC 8) or hide text. Text removes each sequence whole, and
// the skeleton skips it, so that what is left is what a terminal would
// show: "EXTERNAL\x1b[0m_UNTRUSTED" reads as one phrase.

// ctlSeqLen returns the length of the control sequence at s[i:], which
// starts with ESC or with a C1 control (U+0080–U+009F, two bytes in UTF-8):
//
//   - CSI (ESC [ or U+009B): parameter bytes 0x30–0x3F, intermediate bytes
//     0x20–0x2F and a final byte 0x40–0x7E;
//   - control strings, OSC (ESC ] or U+009D), DCS (ESC P, U+0090), SOS
//     (ESC X, U+0098), PM (ESC ^, U+009E) and APC (ESC _, U+009F): up to and
//     including the terminator BEL, ESC \ or U+009C;
//   - ESC, intermediate bytes 0x20–0x2F, a final byte 0x30–0x7E (ESC ( B,
//     ESC 7, ESC c …).
//
// A sequence that is cut short (a CSI without its final byte, a control
// string without its terminator) counts as its introducer alone, so that
// no text after it is lost. Any other C1 control is its own two bytes, a
// lone ESC one byte. *noEnd caches the offset from which s holds no string
// terminator, which keeps a text full of unterminated strings linear; start
// it at len(s)+1.
func ctlSeqLen(s string, i int, noEnd *int) int {
	intro, kind := 1, byte(0)
	if s[i] == 0x1b {
		if i+1 < len(s) {
			kind = s[i+1]
		}
		switch {
		case kind == '[' || kind == ']' || kind == 'P' || kind == 'X' || kind == '^' || kind == '_':
			intro = 2
		case kind >= 0x20 && kind <= 0x2f:
			j := i + 1
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
				j++
			}
			if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
				return j + 1 - i
			}
			return 1
		case kind >= 0x30 && kind <= 0x7e:
			return 2
		default:
			return 1
		}
	} else {
		// A C1 control: 0xC2 then 0x80–0x9F.
		intro = 2
		kind = map7bit[s[i+1]-0x80]
	}
	switch kind {
	case '[':
		j := i + intro
		for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
			j++
		}
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
			return j + 1 - i
		}
	case ']', 'P', 'X', '^', '_':
		if n := stringEnd(s, i+intro, noEnd); n > 0 {
			return n - i
		}
	}
	return intro
}

// map7bit maps a C1 control to the byte that follows ESC in its 7-bit form
// (U+009B CSI is ESC [), for the controls that start a sequence.
var map7bit = [32]byte{0x10: 'P', 0x18: 'X', 0x1b: '[', 0x1d: ']', 0x1e: '^', 0x1f: '_'}

// stringEnd returns the offset just after the terminator of a control
// string whose body starts at s[j:], or 0 if it has none.
func stringEnd(s string, j int, noEnd *int) int {
	if j >= *noEnd {
		return 0
	}
	for k := j; k < len(s); k++ {
		switch s[k] {
		case 0x07:
			return k + 1
		case 0x1b:
			if k+1 < len(s) && s[k+1] == '\\' {
				return k + 2
			}
		case 0xc2:
			if k+1 < len(s) && s[k+1] == 0x9c {
				return k + 2
			}
		}
	}
	*noEnd = j
	return 0
}
