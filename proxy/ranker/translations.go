package ranker

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// translationsTSV is a table of Chinese words and the English stems they
// translate to, learned from the tool and parameter descriptions that
// Feishu/Lark's MCP server ships in both languages (its header says how
// and holds that server's licence). A line is a word (a character or a
// bigram, as splitWords yields them) and one or two "stem:p" fields, p
// the probability that the stem translates the word.
//
//go:embed translations.tsv
var translationsTSV string

// translationWeight scales what a translated word adds to a query:
// translationWeight × p, against 1 for a word of the request itself.
const translationWeight = 1.0

// translation is one English stem a Chinese word translates to.
type translation struct {
	stem string
	p    float64
}

// translations parses translationsTSV, once, on the first use of a
// ranker, so a process that never searches never holds the map.
// TestTranslations checks that every line of it parses.
var translations = sync.OnceValue(func() map[string][]translation {
	m, _ := parseTranslations(translationsTSV)
	return m
})

// parseTranslations reads a table in translationsTSV's format. A field
// that is not "stem:p" with 0 < p ≤ 1 is left out, and the first such
// field is the error.
func parseTranslations(tsv string) (map[string][]translation, error) {
	m := make(map[string][]translation, strings.Count(tsv, "\n"))
	var bad error
	for line := range strings.Lines(tsv) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || line[0] == '#' {
			continue
		}
		word, rest, _ := strings.Cut(line, "\t")
		for f := range strings.SplitSeq(rest, "\t") {
			st, ps, _ := strings.Cut(f, ":")
			p, err := strconv.ParseFloat(ps, 64)
			if err != nil || st == "" || p <= 0 || p > 1 {
				if bad == nil {
					bad = fmt.Errorf("translations: line %q: bad field %q", line, f)
				}
				continue
			}
			m[word] = append(m[word], translation{st, p})
		}
	}
	return m, bad
}

// cjkWord reports whether the lower-case word w is one of splitWords' CJK
// characters or bigrams, the only words the table translates.
func cjkWord(w []byte) bool {
	r, _ := utf8.DecodeRune(w)
	return isCJK(r)
}

// translate adds to s.q the English terms of the catalog that the CJK
// word w translates to, so a request in Chinese finds a tool described in
// English ("列出" → list, "搜索" → search). It allocates nothing.
func (ix *Index) translate(w []byte, s *scratch) {
	if !cjkWord(w) {
		return
	}
	for _, t := range translations()[string(w)] {
		if id, ok := ix.stems[t.stem]; ok {
			s.addTerm(qterm{id, translationWeight * t.p})
		}
	}
}

// addTranslations counts, in fieldTranslated of doc d, the English stems
// that the CJK word w of its description translates to, each at its
// probability, so a request in English finds a tool described in Chinese.
func (b *builder) addTranslations(d int, w []byte) {
	if !cjkWord(w) {
		return
	}
	for _, t := range translations()[string(w)] {
		b.count(d, fieldTranslated, b.stemTerm(t.stem), t.p)
	}
}
