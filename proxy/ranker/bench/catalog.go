package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcp-switchboard/switchboard/proxy/ranker"
)

// ReadCatalogDir reads a directory of recorded tools/list results, one
// server a file named <server>.json, as the ranker's docs (public names
// mcp_<server>_<tool>), in file and then list order.
func ReadCatalogDir(dir string) ([]ranker.Doc, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no <server>.json tools/list results", dir)
	}
	var docs []ranker.Doc
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var list struct {
			Tools []struct {
				Name        string          `json:"name"`
				Title       string          `json:"title"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
				Annotations struct {
					Title string `json:"title"`
				} `json:"annotations"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("%s: not a tools/list result: %v", f, err)
		}
		server := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, t := range list.Tools {
			title := t.Title
			if title == "" {
				title = t.Annotations.Title
			}
			params, err := Params(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("%s: tool %q: input schema: %v", f, t.Name, err)
			}
			docs = append(docs, ranker.Doc{Name: "mcp_" + server + "_" + t.Name, Server: server, Title: title, Description: t.Description, Params: params})
		}
	}
	return docs, nil
}

// Params are the top-level properties of an input schema, by name.
func Params(schema json.RawMessage) ([]ranker.Param, error) {
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
	var ps []ranker.Param
	for n, p := range s.Properties {
		ps = append(ps, ranker.Param{Name: n, Description: p.Description})
	}
	slices.SortFunc(ps, func(a, b ranker.Param) int { return strings.Compare(a.Name, b.Name) })
	return ps, nil
}

// Index is a ranker.Index as a Searcher.
type Index struct {
	*ranker.Index
	Docs []ranker.Doc
}

// Search implements Searcher.
func (x Index) Search(query string, limit int) []string {
	hits := x.Index.Search(query, limit, "")
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = x.Docs[h.Doc].Name
	}
	return out
}
