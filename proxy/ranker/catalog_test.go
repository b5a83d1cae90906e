package ranker

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// recordedTool is one tool of a recorded tools/list result.
type recordedTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations struct {
		Title string `json:"title"`
	} `json:"annotations"`
}

// catalog is the recorded tools of testdata/servers, as Docs.
type catalog struct {
	docs    []Doc
	servers []string
	byName  map[string]int // public name → doc index
}

// loadCatalog reads testdata/servers. Public names are mcp_<server>_<tool>.
func loadCatalog(tb testing.TB) *catalog {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "servers", "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded servers: %v", err)
	}
	c := &catalog{byName: map[string]int{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var list struct{ Tools []recordedTool }
		if err := json.Unmarshal(data, &list); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		server := strings.TrimSuffix(filepath.Base(f), ".json")
		c.servers = append(c.servers, server)
		for _, t := range list.Tools {
			c.add(tb, server, t)
		}
	}
	return c
}

func (c *catalog) add(tb testing.TB, server string, t recordedTool) {
	name := "mcp_" + server + "_" + t.Name
	title := t.Title
	if title == "" {
		title = t.Annotations.Title
	}
	params, err := schemaParams(t.InputSchema)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	c.byName[name] = len(c.docs)
	c.docs = append(c.docs, Doc{Name: name, Server: server, Title: title, Description: t.Description, Params: params})
}

// schemaParams returns the top-level properties of an input schema,
// sorted by name.
func schemaParams(schema json.RawMessage) ([]Param, error) {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, err
		}
	}
	var ps []Param
	for n, p := range s.Properties {
		ps = append(ps, Param{Name: n, Description: p.Description})
	}
	slices.SortFunc(ps, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
	return ps, nil
}

// replicate returns n copies of docs, copy i > 0 with the servers renamed
// <server><i> (and public names to match), as a larger catalog for
// latency figures.
func replicate(docs []Doc, n int) []Doc {
	out := make([]Doc, 0, n*len(docs))
	for i := range n {
		for _, d := range docs {
			if i > 0 {
				server := d.Server + strconv.Itoa(i)
				d.Name = "mcp_" + server + "_" + toolName(d.Name, d.Server)
				d.Server = server
			}
			out = append(out, d)
		}
	}
	return out
}

// query is one labelled request of testdata/queries.jsonl.
type query struct {
	Q      string `json:"q"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

func (q query) public() string { return "mcp_" + q.Server + "_" + q.Tool }

// loadQueries reads testdata/queries.jsonl, the labelled set the ranker
// was tuned on.
func loadQueries(tb testing.TB) []query { return loadQueryFile(tb, "queries.jsonl") }

// loadQueryFile reads a file of labelled requests from testdata.
func loadQueryFile(tb testing.TB, name string) []query {
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var qs []query
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q query
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			tb.Fatalf("%s line %d: %v", name, len(qs)+1, err)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return qs
}
