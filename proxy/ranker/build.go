package ranker

import (
	"math"
	"strings"
)

// The fields of a doc that BM25F weighs separately.
const (
	fieldName       = iota // the tool's own name, without the mcp_<server>_ prefix
	fieldTitle             // Doc.Title
	fieldLead              // the description's first sentence
	fieldDesc              // Doc.Description, the first sentence included
	fieldParamName         // the parameters' names
	fieldParamDesc         // the parameters' descriptions
	fieldServer            // the server key: counted apart, see serverWeight
	fieldTranslated        // the English of a description's CJK words (translations.go)
	numFields
)

// fieldWeight is how much one occurrence of a term in each field counts
// in BM25F. The name and title say what a tool does; the first sentence
// of a description says it more often than the rest. The server key is
// not a BM25F field: see serverWeight.
var fieldWeight = [numFields]float64{
	fieldName:       3,
	fieldTitle:      1.5,
	fieldLead:       0.5,
	fieldDesc:       0.5,
	fieldParamName:  0.125,
	fieldParamDesc:  0.3,
	fieldTranslated: 0.5,
}

// fieldB is BM25F's length normalisation of each field (0: none, 1: full).
var fieldB = [numFields]float64{
	fieldName:       0.3,
	fieldTitle:      0.3,
	fieldLead:       0.5,
	fieldDesc:       0.7,
	fieldParamName:  0.5,
	fieldParamDesc:  0.2,
	fieldTranslated: 0.5,
}

// k1 is BM25's term-frequency saturation.
const k1 = 1.2

// serverWeight scales what a term of the server key adds to every tool of
// that server: serverWeight × idf, the same for all of them, outside the
// BM25F sum. A request that names a server ("… on GitHub") thus prefers
// its tools, but since the mcp_<server>_ prefix is kept out of the name
// field, the server's words never outweigh the words that pick the tool
// among its siblings.
const serverWeight = 3.0

// builder holds what New needs only while it builds an Index.
type builder struct {
	ix      *Index
	stemOf  map[string]string // lower-case word → stem, or "" for a stop word
	tf      []map[int32]*[numFields]float64
	lengths [][numFields]float64
}

func newBuilder(ix *Index) *builder {
	ix.servers = map[string]int32{}
	ix.surface = map[string]int32{}
	ix.stems = map[string]int32{}
	return &builder{ix: ix, stemOf: map[string]string{}}
}

// index tokenizes every doc and fills ix's postings and synonyms.
func (b *builder) index(docs []Doc) {
	ix := b.ix
	ix.docServer = make([]int32, len(docs))
	b.tf = make([]map[int32]*[numFields]float64, len(docs))
	b.lengths = make([][numFields]float64, len(docs))
	for d, doc := range docs {
		sid, ok := ix.servers[doc.Server]
		if !ok {
			sid = int32(len(ix.servers))
			ix.servers[doc.Server] = sid
		}
		ix.docServer[d] = sid
		b.tf[d] = map[int32]*[numFields]float64{}
		b.add(d, fieldName, toolName(doc.Name, doc.Server))
		b.add(d, fieldTitle, doc.Title)
		b.add(d, fieldLead, lead(doc.Description))
		b.add(d, fieldDesc, doc.Description)
		for _, p := range doc.Params {
			b.add(d, fieldParamName, p.Name)
			b.add(d, fieldParamDesc, p.Description)
		}
		b.add(d, fieldServer, doc.Server)
	}
	b.addSynonyms()
	b.weigh()
	for w, st := range b.stemOf {
		if st == "" {
			ix.surface[w] = noTerm
		} else {
			ix.surface[w] = ix.stems[st]
		}
	}
}

// toolName is the part of a public name after the mcp_<server>_ prefix,
// so the server's words are counted in fieldServer only. A name without
// that prefix is returned whole.
func toolName(name, server string) string {
	if rest, ok := strings.CutPrefix(name, "mcp_"+server+"_"); ok && rest != "" {
		return rest
	}
	return name
}

// leadMax caps the length of a lead sentence, in bytes.
const leadMax = 300

// lead returns the first sentence of a description: up to the first line
// break or sentence end, at most leadMax bytes. Long descriptions go on
// with usage notes, examples and warnings whose words say little about
// what the tool does; the first sentence usually says it.
func lead(desc string) string {
	desc = strings.TrimSpace(desc)
	end := len(desc)
	if i := strings.IndexByte(desc, '\n'); i >= 0 {
		end = i
	}
	for _, stop := range []string{". ", "! ", "? "} {
		if i := strings.Index(desc[:end], stop); i >= 0 {
			end = i + 1
		}
	}
	if end > leadMax {
		end = leadMax
	}
	return desc[:end]
}

// term returns the id of the stem of the lower-case word w, adding it to
// the index, or noTerm for a stop word.
func (b *builder) term(w string) int32 {
	st, ok := b.stemOf[w]
	if !ok {
		if !isStop(w) {
			st = stem(w)
		}
		b.stemOf[w] = st
	}
	if st == "" {
		return noTerm
	}
	return b.stemTerm(st)
}

// stemTerm returns the id of the stem st, adding it to the index.
func (b *builder) stemTerm(st string) int32 {
	id, ok := b.ix.stems[st]
	if !ok {
		id = int32(len(b.ix.post))
		b.ix.stems[st] = id
		b.ix.post = append(b.ix.post, nil)
		b.ix.syn = append(b.ix.syn, nil)
	}
	return id
}

// add counts the terms of text in field f of doc d, and in
// fieldTranslated the translations of a description's CJK words.
func (b *builder) add(d, f int, text string) {
	var buf []byte
	splitWords(text, func(w string) {
		buf = appendLower(buf[:0], w)
		if f == fieldDesc {
			b.addTranslations(d, buf)
		}
		if id := b.term(string(buf)); id != noTerm {
			b.count(d, f, id, 1)
		}
	})
}

// count adds n occurrences of term id to field f of doc d.
func (b *builder) count(d, f int, id int32, n float64) {
	c := b.tf[d][id]
	if c == nil {
		c = new([numFields]float64)
		b.tf[d][id] = c
	}
	c[f] += n
	b.lengths[d][f] += n
}

// weigh turns the counted frequencies into postings with their final
// BM25F weights. Postings come out in doc order, since docs are visited
// in order.
func (b *builder) weigh() {
	n := len(b.tf)
	var avg [numFields]float64
	for _, l := range b.lengths {
		for f := range l {
			avg[f] += l[f] / float64(n)
		}
	}
	df := make([]int, len(b.ix.post))
	for _, m := range b.tf {
		for id := range m {
			df[id]++
		}
	}
	for d, m := range b.tf {
		for id, c := range m {
			tf := 0.0
			for f := range c {
				if c[f] == 0 || f == fieldServer {
					continue
				}
				norm := 1.0
				if avg[f] > 0 {
					norm = 1 - fieldB[f] + fieldB[f]*b.lengths[d][f]/avg[f]
				}
				tf += fieldWeight[f] * c[f] / norm
			}
			idf := math.Log(1 + (float64(n)-float64(df[id])+0.5)/(float64(df[id])+0.5))
			w := idf * tf * (k1 + 1) / (tf + k1)
			if c[fieldServer] > 0 {
				w += serverWeight * idf
			}
			b.ix.post[id] = append(b.ix.post[id], posting{doc: int32(d), w: float32(w)})
		}
	}
}
