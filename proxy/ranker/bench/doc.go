// Package bench scores a tool ranker on labelled requests: the figures
// of docs/discovery-figures.md and of `switchboard bench search`.
//
// A labelled file holds one request a line, as JSON, with the tools it
// needs. A request of several steps lists them, each with the query an
// agent would search for that step and the tools that answer it (any one
// of them will do):
//
//	{"request": "…", "steps": [{"query": "…", "tools": ["mcp_a_x", "mcp_b_y"]}]}
//	{"request": "…", "tools": ["mcp_a_x"]}
//	{"q": "…", "server": "a", "tool": "x"}
//
// The second form is a request searched as it is, each tool one step; the
// third is the older single-tool form of proxy/ranker/testdata.
//
// Score measures per-step recall (each step's query searched on its own,
// a step found when one of its tools is among the first k) and
// whole-request recall (the request searched as one query). BM25 is the
// plain baseline the figures stand beside: one field of name, description
// and parameters, no stemming, no synonyms.
package bench
