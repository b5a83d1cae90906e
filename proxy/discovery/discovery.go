package discovery

import (
	"sort"
	"strings"
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
	docs []Doc
}

// New builds an index of docs. The slice is kept: callers must not modify it.
func New(docs []Doc) *Index { return &Index{docs: docs} }

// Len is the number of docs.
func (ix *Index) Len() int { return len(ix.docs) }

// Search returns up to limit hits for query, best first, only among the
// docs of server when it is not empty. Docs that share no term with the
// query are not returned.
func (ix *Index) Search(query string, limit int, server string) []Hit {
	terms := strings.Fields(strings.ToLower(query))
	var hits []Hit
	for i, d := range ix.docs {
		if server != "" && d.Server != server {
			continue
		}
		text := strings.ToLower(d.Name + " " + d.Title + " " + d.Description)
		score := 0.0
		for _, t := range terms {
			if strings.Contains(text, t) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, Hit{Doc: i, Score: score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}
