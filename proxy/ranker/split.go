package ranker

import (
	"unicode"
	"unicode/utf8"
)

// maxParts caps how many parts of a request are searched on their own:
// a request of more steps is still searched whole.
const maxParts = 8

// minPartWords is how many words the catalog knows a part needs to be
// searched on its own: "add 2 and 3" is one step, not two.
const minPartWords = 2

// wholeWeight is what the whole request's normalised score counts beside
// each part's (tuned on the tuning halves of testdata/tasks and goals).
const wholeWeight = 3.0

// splitParts calls fn with each clause of query, in order: the text
// between punctuation that ends a clause (, ; : . ! ? and line breaks)
// and the words "and" and "then". A request of several steps ("find the
// failing job, then post its logs to Slack") thus yields one part a step.
// The parts are substrings of query.
func splitParts(query string, fn func(part string)) {
	start := 0
	emit := func(end int) {
		if end > start {
			fn(query[start:end])
		}
	}
	for i := 0; i < len(query); {
		r, size := utf8.DecodeRuneInString(query[i:])
		switch {
		case r == ',' || r == ';' || r == ':' || r == '.' || r == '!' || r == '?' || r == '\n' ||
			r == '，' || r == '；' || r == '。' || r == '、':
			emit(i)
			start = i + size
		case unicode.IsLetter(r) && (i == 0 || !isWordByte(query[i-1])):
			end := i
			for end < len(query) && isWordByte(query[end]) {
				end++
			}
			if w := query[i:end]; equalFoldASCII(w, "and") || equalFoldASCII(w, "then") {
				emit(i)
				start = end
			}
			if end > i {
				i = end
				continue
			}
		}
		i += size
	}
	emit(len(query))
}

// isWordByte reports whether c is an ASCII letter or digit.
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// equalFoldASCII reports whether w is s (lower-case ASCII) in any case.
func equalFoldASCII(w, s string) bool {
	if len(w) != len(s) {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
