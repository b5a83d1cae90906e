package tokens

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/proxy/ranker"
	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// wantRatio is issue 22's target: search-mode tokens / all-mode tokens.
const wantRatio = 0.10

// published is a tool as tools/list publishes it in "all" mode.
type published struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// recordedTools reads ../testdata/servers, the tools/list results of real
// servers, and returns their tools as "all" mode publishes them: public
// names are mcp_<server>_<tool>, in file and then list order.
func recordedTools(t *testing.T) []published {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "servers", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded servers: %v", err)
	}
	var tools []published
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		server := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, tl := range list.Tools {
			tools = append(tools, published{Name: "mcp_" + server + "_" + tl.Name, Description: tl.Description, InputSchema: tl.InputSchema})
		}
	}
	return tools
}

// TestTokens counts the tokens of the tools/list result in "all" mode
// (every tool) and in "search" mode (switchboard_find_tools and
// switchboard_call_tool, as the proxy publishes them), with the o200k_base
// and cl100k_base encodings, whose tables tiktoken-go-loader embeds (no
// network), and as bytes/4.
func TestTokens(t *testing.T) {
	tools := recordedTools(t)
	all, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		t.Fatal(err)
	}
	search := []byte(`{"tools":[` + ranker.FindToolsDefinition + `,` + ranker.CallToolDefinition + `]}`)
	if !json.Valid(search) {
		t.Fatal("the search-mode tool definitions are not valid JSON")
	}
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		tk, err := tiktoken.GetEncoding(enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		na, ns := len(tk.Encode(string(all), nil, nil)), len(tk.Encode(string(search), nil, nil))
		ratio := float64(ns) / float64(na)
		t.Logf("%s: all %d tokens (%d tools), search %d tokens: %.2f%%", enc, na, len(tools), ns, 100*ratio)
		if ratio > wantRatio {
			t.Errorf("%s: search mode is %.1f%% of all: want at most %.0f%% (issue 22)", enc, 100*ratio, 100*wantRatio)
		}
	}
	t.Logf("bytes/4: all %d, search %d: %.2f%%", len(all)/4, len(search)/4, 100*float64(len(search))/float64(len(all)))
}
