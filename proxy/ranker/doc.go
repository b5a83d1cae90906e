// Package ranker ranks a view's tools against a natural-language
// request, for progressive tool discovery (switchboard_find_tools, issue
// 22): a lexical BM25F ranker over each tool's name, title, description
// and parameter names and descriptions, with case splitting of names,
// stop words, English stemming, a small table of general synonyms, two
// adjacent request words joined when the catalog writes them as one, and
// CJK text read as characters and bigrams and translated to English by an
// embedded table (translations.tsv), both ways.
//
// It is pure Go, with no I/O and no model, and imports no package of this
// module. New does all the work once per catalog: it tokenizes every field
// and precomputes, for every term, the postings with each doc's final
// BM25F weight, so Search only adds precomputed weights and keeps the best
// hits in a small heap.
//
// An Index is immutable once built and safe for concurrent use; Search
// borrows its scratch space from a per-Index sync.Pool.
package ranker
