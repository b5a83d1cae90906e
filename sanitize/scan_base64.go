package sanitize

import (
	"unicode/utf8"
)

// Base64 runs. A long run of base64 is how certificates, keys, images and
// fonts travel, and how an instruction is smuggled past a reader. Scan
// decodes each run of at least MinBase64Run characters that looks like
// text once decoded and scans that text; only a run that hides a finding
// is reported. Binary payloads (DER certificates, PNG, fonts) are not
// text, and a base64 PEM or JSON document is text without findings.

// scanBase64 reports PatternBase64Run, with what the decoded text holds,
// for every run that hides a finding. A run is MinBase64Run or more base64
// characters (standard or URL-safe alphabet; line breaks may continue a
// run after a line of at least 60 characters, as in MIME and PEM) mixing
// upper case, lower case and digits, which rules out hex dumps and rows of
// '='.
func scanBase64(text string) patternSet {
	if len(text) < MinBase64Run {
		return 0
	}
	var found patternSet
	for i := 0; i < len(text); {
		if base64Class[text[i]] == 0 {
			i++
			continue
		}
		start, run, line := i, 0, 0
		var mix byte
		for ; i < len(text); i++ {
			c := text[i]
			if k := base64Class[c]; k != 0 {
				mix |= k
				run++
				line++
				continue
			}
			if c != '\n' && c != '\r' || line < 60 {
				break
			}
			if c == '\n' {
				line = 0
			}
		}
		if run >= MinBase64Run && mix&7 == 7 {
			found |= decodedFindings(text[start:i])
		}
	}
	return found
}

// decodedFindings decodes a base64 run (at the alignment that gives text)
// and scans it.
func decodedFindings(run string) patternSet {
	for off := 0; off < 4; off++ {
		head := decodeBase64(run, off, 256)
		if !looksLikeText(head) {
			continue
		}
		dec := string(decodeBase64(run, off, len(run)))
		a := analyze(dec)
		inner := a.scan(dec)
		a.release()
		if inner&^pStrong == 0 {
			return 0
		}
		return inner | pBase64 | pStrong
	}
	return 0
}

// decodeBase64 decodes up to max bytes of run, skipping its first skip
// base64 characters, line breaks and '=' padding.
func decodeBase64(run string, skip, max int) []byte {
	out := make([]byte, 0, min(max, len(run)*3/4+3))
	var acc uint32
	n := 0
	for i := 0; i < len(run) && len(out) < max; i++ {
		v := base64Value[run[i]]
		if v == 0xff {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		acc = acc<<6 | uint32(v)
		if n++; n == 4 {
			out = append(out, byte(acc>>16), byte(acc>>8), byte(acc))
			acc, n = 0, 0
		}
	}
	return out
}

// looksLikeText reports whether b is UTF-8 text: valid (but for a rune cut
// at the end) and free of control characters other than tab and line
// breaks.
func looksLikeText(b []byte) bool {
	if len(b) < 16 {
		return false
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return len(b)-i < utf8.UTFMax && !utf8.FullRune(b[i:])
		}
		i += n
	}
	return true
}

// base64Class is 1, 2 or 4 for upper case, lower case and digits, 8 for the
// other characters of the two base64 alphabets, and 0 outside them.
var base64Class = func() (t [256]byte) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = 1
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = 2
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 4
	}
	for _, c := range "+/=-_" {
		t[c] = 8
	}
	return t
}()

// base64Value is the 6-bit value of a character of either alphabet, 0xff
// for anything else ('=' included).
var base64Value = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	const std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(std); i++ {
		t[std[i]] = byte(i)
	}
	t['-'], t['_'] = 62, 63
	return t
}()
