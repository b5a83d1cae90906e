package ranker

import (
	"math"
	"sync"
)

// Doc is one tool as the ranker sees it.
type Doc struct {
	Name        string // the public name
	Server      string // the server's config key
	Title       string
	Description string // the full, cleaned description
	Params      []Param
}

// Param is one parameter of a tool's input schema.
type Param struct {
	Name        string
	Description string
}

// Hit is one ranked result: the index of its Doc in the slice New was
// given, and its score (higher is better).
type Hit struct {
	Doc   int
	Score float64
}

// Index ranks a fixed set of Docs.
type Index struct {
	docs      []Doc
	docServer []int32          // server id of each doc
	servers   map[string]int32 // server key → id
	surface   map[string]int32 // lower-case word → term id, or noTerm for a stop word
	stems     map[string]int32 // stem → term id
	post      [][]posting      // term id → postings, in doc order
	syn       [][]qterm        // term id → the terms a query also looks for
	pool      sync.Pool        // *scratch
}

// noTerm marks a stop word in Index.surface.
const noTerm = -1

// posting is one doc that contains a term, with the term's whole BM25F
// contribution to that doc's score (idf × saturated, length-normalised,
// field-weighted frequency), computed once in New.
type posting struct {
	doc int32
	w   float32
}

// qterm is one term of a query, with the weight of its contribution:
// 1 for a word of the query, less for a synonym.
type qterm struct {
	id int32
	w  float64
}

// scratch is the per-search state Search borrows from Index.pool.
type scratch struct {
	acc     []float64 // score of each doc; zero for untouched docs
	touched []int32   // docs whose acc is not zero
	part    []float64 // score of each doc for one part of the query (fuseParts)
	parts   []string  // the parts of the query
	q       []qterm
	buf     []byte
	prev    []byte // the query's previous word, lower-case (queryTerms)
	heap    []Hit
}

// New builds an index of docs. The slice is kept: callers must not modify it.
func New(docs []Doc) *Index {
	ix := &Index{docs: docs}
	b := newBuilder(ix)
	b.index(docs)
	n := len(docs)
	ix.pool.New = func() any { return &scratch{acc: make([]float64, n)} }
	return ix
}

// Len is the number of docs.
func (ix *Index) Len() int { return len(ix.docs) }

// Search returns up to limit hits for query, best first (ties in doc
// order), only among the docs of server when it is not empty. If limit is
// zero or negative, every hit is returned. Docs that share no term with
// the query are not returned. Search is safe for concurrent use.
func (ix *Index) Search(query string, limit int, server string) []Hit {
	sid := int32(-1)
	if server != "" {
		id, ok := ix.servers[server]
		if !ok {
			return nil
		}
		sid = id
	}
	s := ix.pool.Get().(*scratch)
	defer ix.pool.Put(s)
	ix.queryTerms(query, s)
	ix.accumulate(s, s.acc, sid, true)
	if len(s.q) > 1 && len(s.touched) > 0 {
		ix.fuseParts(query, s, sid)
	}
	hits := s.top(limit)
	for _, d := range s.touched {
		s.acc[d] = 0
	}
	s.touched = s.touched[:0]
	return hits
}

// accumulate adds the weights of s.q's terms' postings into acc, only
// for docs of server sid (when >= 0); with touch, the docs it first
// touches are added to s.touched.
func (ix *Index) accumulate(s *scratch, acc []float64, sid int32, touch bool) {
	for _, qt := range s.q {
		for _, p := range ix.post[qt.id] {
			if sid >= 0 && ix.docServer[p.doc] != sid {
				continue
			}
			if touch && acc[p.doc] == 0 {
				s.touched = append(s.touched, p.doc)
			}
			acc[p.doc] += qt.w * float64(p.w)
		}
	}
}

// fuseParts gives each part of a request of several parts (splitParts)
// its say: a doc's score becomes the whole request's score and each
// part's, each divided by the best score it gave any doc, so that every
// step's best tools rank near the top, whatever the other steps' words
// weigh. A request of one part keeps its plain score. The parts' terms
// are among the whole request's, so they touch no new doc.
func (ix *Index) fuseParts(query string, s *scratch, sid int32) {
	s.parts = s.parts[:0]
	splitParts(query, func(part string) {
		if len(s.parts) < maxParts {
			s.parts = append(s.parts, part)
		}
	})
	if len(s.parts) < 2 {
		return
	}
	if s.part == nil {
		s.part = make([]float64, len(s.acc))
	}
	n := 0
	for _, part := range s.parts {
		if ix.queryTerms(part, s); words(s.q) >= minPartWords {
			s.parts[n] = part
			n++
		}
	}
	if n < 2 {
		return
	}
	normalise(s.acc, s.touched, wholeWeight)
	for _, part := range s.parts[:n] {
		ix.queryTerms(part, s)
		ix.accumulate(s, s.part, sid, false)
		best := 0.0
		for _, d := range s.touched {
			best = math.Max(best, s.part[d])
		}
		for _, d := range s.touched {
			if best > 0 {
				s.acc[d] += s.part[d] / best
			}
			s.part[d] = 0
		}
	}
}

// words is how many of q are words of the query, not synonyms.
func words(q []qterm) int {
	n := 0
	for _, t := range q {
		if t.w == 1 {
			n++
		}
	}
	return n
}

// normalise scales the scores of docs so that the best is w.
func normalise(acc []float64, docs []int32, w float64) {
	best := 0.0
	for _, d := range docs {
		best = math.Max(best, acc[d])
	}
	for _, d := range docs {
		acc[d] *= w / best
	}
}

// queryTerms fills s.q with the distinct terms of query and their
// synonyms. A word the catalog contains costs a map lookup; only a word
// it does not contain is stemmed, which allocates. Two adjacent words
// that the catalog writes as one ("roll back", "log in", "set up") also
// look for that word (joinTerm).
func (ix *Index) queryTerms(query string, s *scratch) {
	s.q = s.q[:0]
	s.prev = s.prev[:0]
	splitWords(query, func(w string) {
		s.buf = appendLower(s.buf[:0], w)
		ix.joinTerm(s)
		s.prev = append(s.prev[:0], s.buf...)
		ix.translate(s.buf, s)
		id, ok := ix.surface[string(s.buf)]
		if !ok {
			lw := string(s.buf)
			if isStop(lw) {
				return
			}
			if id, ok = ix.stems[stem(lw)]; !ok {
				return
			}
		}
		if id == noTerm {
			return
		}
		s.addTerm(qterm{id, 1})
		for _, e := range ix.syn[id] {
			s.addTerm(e)
		}
	})
}

// joinTerm adds to s.q the term of the previous word and this one
// (s.prev and s.buf) written as one word, when the catalog contains that
// word as it is, and its synonyms. It allocates nothing: the joined word
// is built in s.prev, which the caller overwrites next.
func (ix *Index) joinTerm(s *scratch) {
	if len(s.prev) == 0 {
		return
	}
	s.prev = append(s.prev, s.buf...)
	if id, ok := ix.surface[string(s.prev)]; ok && id != noTerm {
		s.addTerm(qterm{id, 1})
		for _, e := range ix.syn[id] {
			s.addTerm(e)
		}
	}
}

// addTerm adds t to s.q, keeping the larger weight of a term seen twice.
func (s *scratch) addTerm(t qterm) {
	for i := range s.q {
		if s.q[i].id == t.id {
			s.q[i].w = math.Max(s.q[i].w, t.w)
			return
		}
	}
	s.q = append(s.q, t)
}

// better reports whether a ranks before b: a higher score, or the same
// score and an earlier doc.
func better(a, b Hit) bool {
	return a.Score > b.Score || (a.Score == b.Score && a.Doc < b.Doc)
}

// top returns the best limit (all if limit <= 0) of the touched docs,
// best first, selected with a min-heap of the worst kept hit at the root.
func (s *scratch) top(limit int) []Hit {
	if len(s.touched) == 0 {
		return nil
	}
	if limit <= 0 || limit > len(s.touched) {
		limit = len(s.touched)
	}
	h := s.heap[:0]
	for _, d := range s.touched {
		hit := Hit{Doc: int(d), Score: s.acc[d]}
		if len(h) < limit {
			h = append(h, hit)
			siftUp(h, len(h)-1)
		} else if better(hit, h[0]) {
			h[0] = hit
			siftDown(h, 0)
		}
	}
	out := make([]Hit, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = h[0]
		h[0] = h[len(h)-1]
		h = h[:len(h)-1]
		siftDown(h, 0)
	}
	s.heap = h
	return out
}

// siftUp restores the heap order of h (worst hit at the root) after h[i]
// was added.
func siftUp(h []Hit, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

// siftDown restores the heap order of h after h[i] was replaced.
func siftDown(h []Hit, i int) {
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && better(h[worst], h[l]) {
			worst = l
		}
		if r < len(h) && better(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}
