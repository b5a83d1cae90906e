package ranker

import (
	_ "embed"
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
var translations = sync.OnceValue(func() map[string][]translation {
	m := make(map[string][]translation, strings.Count(translationsTSV, "\n"))
	for line := range strings.Lines(translationsTSV) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || line[0] == '#' {
			continue
		}
		word, rest, _ := strings.Cut(line, "\t")
		var ts []translation
		for f := range strings.SplitSeq(rest, "\t") {
			st, ps, _ := strings.Cut(f, ":")
			p, err := strconv.ParseFloat(ps, 64)
			if err != nil || st == "" || p <= 0 || p > 1 {
				panic("ranker: translations.tsv: bad field " + strconv.Quote(f) + " in line " + strconv.Quote(line))
			}
			ts = append(ts, translation{st, p})
		}
		m[word] = ts
	}
	return m
})

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
		id, ok := b.ix.stems[t.stem]
		if !ok {
			id = int32(len(b.ix.post))
			b.ix.stems[t.stem] = id
			b.ix.post = append(b.ix.post, nil)
			b.ix.syn = append(b.ix.syn, nil)
		}
		b.count(d, fieldTranslated, id, t.p)
	}
}
