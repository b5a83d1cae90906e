package discovery

import "strings"

// synonyms are the few general equivalences a request and a tool
// description often word differently: abbreviations and everyday words
// for the same operation. Each row is one group; a query word of a group
// also looks for the other members, each at synonymWeight. The table is
// kept small and general: it names no server and no tool.
var synonyms = [][]string{
	{"pr", "pull request"},
	{"repo", "repository"},
	{"db", "database"},
	{"k8s", "kubernetes"},
	{"folder", "directory"},
	{"dir", "directory"},
	{"delete", "remove"},
	{"picture", "image"},
	{"photo", "image"},
	{"js", "javascript"},
}

// synonymWeight is how much a synonym's match counts against a match of
// the word the request used.
const synonymWeight = 0.5

// addSynonyms interns every word of the table and fills ix.syn, so that
// Search finds a synonym by term id even when the catalog never uses it.
func (b *builder) addSynonyms() {
	for _, group := range synonyms {
		ids := make([][]int32, len(group))
		for i, phrase := range group {
			for _, w := range strings.Fields(phrase) {
				if id := b.term(w); id != noTerm {
					ids[i] = append(ids[i], id)
				}
			}
		}
		for i, from := range ids {
			if len(from) != 1 {
				continue // a phrase adds no synonyms of its own
			}
			for j, to := range ids {
				if j == i {
					continue
				}
				for _, id := range to {
					b.ix.syn[from[0]] = appendTerm(b.ix.syn[from[0]], qterm{id, synonymWeight})
				}
			}
		}
	}
}

// appendTerm appends t to ts unless ts holds its term already.
func appendTerm(ts []qterm, t qterm) []qterm {
	for _, x := range ts {
		if x.id == t.id {
			return ts
		}
	}
	return append(ts, t)
}
