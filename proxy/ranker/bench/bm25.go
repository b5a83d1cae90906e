package bench

import (
	"maps"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/mcp-switchboard/switchboard/proxy/ranker"
)

// BM25 is plain Okapi BM25 over one field per tool: its name, description
// and parameters' names and descriptions, lower-cased and split at every
// character that is not a letter or digit (so snake and kebab case split,
// camel case does not). No stemming, stop words or synonyms: the baseline
// the figures stand beside.
type BM25 struct {
	names []string
	post  map[string][]bm25Posting
	idf   map[string]float64
}

type bm25Posting struct {
	doc int
	w   float64
}

// BM25's parameters, the textbook ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// NewBM25 indexes docs.
func NewBM25(docs []ranker.Doc) *BM25 {
	x := &BM25{post: map[string][]bm25Posting{}, idf: map[string]float64{}}
	tfs := make([]map[string]float64, len(docs))
	lens := make([]float64, len(docs))
	avg := 0.0
	for d, doc := range docs {
		x.names = append(x.names, doc.Name)
		text := []string{doc.Name, doc.Title, doc.Description}
		for _, p := range doc.Params {
			text = append(text, p.Name, p.Description)
		}
		tf := map[string]float64{}
		for _, w := range plainWords(strings.Join(text, " ")) {
			tf[w]++
			lens[d]++
		}
		tfs[d] = tf
		avg += lens[d] / float64(len(docs))
	}
	df := map[string]int{}
	for _, tf := range tfs {
		for w := range tf {
			df[w]++
		}
	}
	n := float64(len(docs))
	for w, c := range df {
		x.idf[w] = math.Log(1 + (n-float64(c)+0.5)/(float64(c)+0.5))
	}
	for d, tf := range tfs {
		for _, w := range slices.Sorted(maps.Keys(tf)) {
			f := tf[w]
			norm := 1 - bm25B + bm25B*lens[d]/avg
			x.post[w] = append(x.post[w], bm25Posting{d, x.idf[w] * f * (bm25K1 + 1) / (f + bm25K1*norm)})
		}
	}
	return x
}

// Search implements Searcher.
func (x *BM25) Search(query string, limit int) []string {
	acc := map[int]float64{}
	seen := map[string]bool{}
	for _, w := range plainWords(query) {
		if seen[w] {
			continue
		}
		seen[w] = true
		for _, p := range x.post[w] {
			acc[p.doc] += p.w
		}
	}
	docs := slices.Collect(maps.Keys(acc))
	slices.SortFunc(docs, func(a, b int) int {
		if acc[a] != acc[b] {
			if acc[a] > acc[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	if len(docs) > limit {
		docs = docs[:limit]
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = x.names[d]
	}
	return out
}

func plainWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
