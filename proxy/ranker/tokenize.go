package ranker

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// splitWords calls fn with each word of s, in order: runs of letters and
// digits, further split at case changes, so that snake, kebab and camel
// case names yield their words (mcp_github_create_pull_request,
// createPullRequest, list-issues, HTTPServer → HTTP Server). The words
// are substrings of s; nothing is allocated.
func splitWords(s string, fn func(word string)) {
	start := -1 // byte offset of the current word, or -1
	var prev rune
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if start >= 0 {
				fn(s[start:i])
				start = -1
			}
			i += size
			continue
		}
		if isCJK(r) {
			if start >= 0 {
				fn(s[start:i])
				start = -1
			}
			i = cjkBigrams(s, i, fn)
			continue
		}
		if start < 0 {
			start = i
		} else if caseBoundary(prev, r, s[i+size:]) {
			fn(s[start:i])
			start = i
		}
		prev = r
		i += size
	}
	if start >= 0 {
		fn(s[start:])
	}
}

// isCJK reports whether r is written without spaces between words: Han,
// Hiragana, Katakana or Hangul.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// cjkBigrams calls fn with every character and every two adjacent
// characters of the run of CJK characters that starts at s[i], and
// returns where the run ends. Such text has no spaces to split at;
// overlapping bigrams are the usual unit for ranking it, with no
// dictionary, and the single characters beside them find the words of
// one character that bigrams across word boundaries lose ("群", "堵")
// ("列出文件" → 列, 列出, 出, 出文, 文, 文件, 件).
func cjkBigrams(s string, i int, fn func(word string)) int {
	prev := i
	_, size := utf8.DecodeRuneInString(s[i:])
	i += size
	fn(s[prev:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isCJK(r) {
			break
		}
		fn(s[prev : i+size])
		fn(s[i : i+size])
		prev = i
		i += size
	}
	return i
}

// caseBoundary reports whether a new word starts at r, given the rune
// before it and the text after it: at a lower-to-upper change (createPull),
// and before the last capital of an acronym that a lower-case word
// continues (HTTPServer → HTTP Server).
func caseBoundary(prev, r rune, rest string) bool {
	if !unicode.IsUpper(r) {
		return false
	}
	if unicode.IsLower(prev) {
		return true
	}
	if unicode.IsUpper(prev) && rest != "" {
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	}
	return false
}

// appendLower appends the lower-case form of w to buf.
func appendLower(buf []byte, w string) []byte {
	for i := 0; i < len(w); {
		c := w[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf = append(buf, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(w[i:])
		buf = utf8.AppendRune(buf, unicode.ToLower(r))
		i += size
	}
	return buf
}

// isStop reports whether the lower-case word w carries no meaning for
// ranking: an English stop word, a word of one letter, or one of the few
// words requests are wrapped in ("please", "want", "using").
func isStop(w string) bool {
	if r, size := utf8.DecodeRuneInString(w); size == len(w) {
		return !isCJK(r) || strings.ContainsRune(cjkStop, r)
	}
	if english.IsStopWord(w) {
		return true
	}
	switch w {
	case "please", "want", "need", "would", "could", "can", "let", "lets",
		"us", "also", "use", "using", "via", "like", "give", "tell", "mcp":
		return true
	}
	return false
}

// cjkStop holds the Chinese characters that alone carry no meaning for
// ranking: particles, pronouns, the commonest verbs of a request and
// measure words.
const cjkStop = "的了在是我你他她它们这那有和与及或个一不也都就把被给让帮请吗呢吧啊么什怎哪些里下上中之为以到对将"

// stem returns the stem of the lower-case word w.
func stem(w string) string { return english.Stem(w, true) }

// terms returns the stems of the meaningful words of s, in order,
// repeated as often as they occur. It allocates and is meant for New.
func terms(s string) []string {
	var out []string
	var buf []byte
	splitWords(s, func(w string) {
		buf = appendLower(buf[:0], w)
		if lw := string(buf); !isStop(lw) {
			out = append(out, stem(lw))
		}
	})
	return out
}
