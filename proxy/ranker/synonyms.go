package ranker

import "strings"

// synonyms are the general equivalences a request and a tool description
// often word differently: abbreviations, and everyday words for the same
// operation or thing. Each row is one group; a query word of a group also
// looks for the other members, each at synonymWeight. Rows are English
// and software vocabulary, never a server's or a tool's own wording for
// one request; several were added after reading the labelled requests
// the ranker missed, which docs/discovery-figures.md takes into account;
// ten more (watch, insert, aggregate, fail, version, usage, internet,
// row, business, app) after reading the misses of the tuning halves of
// issue 38's sets, and "high" to the elevation row.
var synonyms = [][]string{
	// Abbreviations.
	{"pr", "pull request"},
	{"mr", "merge request"},
	{"repo", "repository"},
	{"db", "database"},
	{"k8s", "kubernetes"},
	{"js", "javascript"},
	{"dir", "directory"},
	{"url", "link"},
	{"stats", "statistics"},
	// Operations.
	{"create", "make", "new", "open", "add"},
	{"get", "fetch", "retrieve", "read", "show"},
	{"list", "show", "display"},
	{"update", "edit", "modify", "change", "set"},
	{"delete", "remove", "drop", "erase"},
	{"find", "search", "look"},
	{"run", "execute"},
	{"start", "launch"},
	{"cancel", "stop", "abort"},
	{"kill", "terminate"},
	{"retry", "rerun", "restart"},
	{"undo", "revert", "rollback"},
	{"send", "post"},
	{"reply", "answer", "respond", "response"},
	{"upload", "attach"},
	{"navigate", "visit", "go"},
	{"switch", "select"},
	{"forget", "delete"},
	{"remember", "memorize", "memory"},
	{"approve", "review"},
	{"inspect", "describe", "detail"},
	{"simulate", "emulate", "pretend", "fake", "mock"},
	{"watch", "monitor", "notify", "notification"},
	{"insert", "add"},
	{"aggregate", "group", "total"},
	{"fail", "failure", "red", "broken"},
	// Things.
	{"folder", "directory"},
	{"picture", "image", "photo"},
	{"setting", "config", "configuration", "preference"},
	{"popup", "dialog", "alert", "modal"},
	{"error", "exception", "crash"},
	{"user", "member", "people", "everyone", "account"},
	{"bug", "issue"},
	{"note", "comment", "observation"},
	{"property", "field", "attribute"},
	{"tree", "hierarchy"},
	{"know", "knowledge"},
	{"count", "number"},
	{"size", "big", "large"},
	{"recent", "lately", "latest"},
	{"more", "next"},
	{"sum", "total", "add"},
	{"allow", "permit", "permission", "access"},
	{"relation", "relationship", "connection"},
	{"elevation", "altitude", "height", "high"},
	{"input", "box"},
	{"xhr", "request"},
	{"schema", "structure", "shape"},
	{"flaky", "intermittent"},
	{"sql", "query"},
	{"table", "collection"},
	{"tab", "page"},
	{"terminal", "shell"},
	{"video", "screencast"},
	{"route", "direction"},
	{"coordinate", "latitude", "longitude"},
	{"version", "release"},
	{"usage", "used", "consumption"},
	{"internet", "web", "online"},
	{"row", "record", "document", "entry"},
	{"business", "place", "shop", "store", "venue"},
	{"app", "application", "project"},
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
					b.ix.syn[from[0]] = appendTerm(b.ix.syn[from[0]], qterm{id: id, w: synonymWeight})
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
