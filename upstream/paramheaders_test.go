package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParamHeaders(t *testing.T) {
	var schema map[string]any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"n":{"type":"integer","x-mcp-header":"N"},
		"ok":{"type":"boolean","x-mcp-header":"Ok"},
		"f":{"type":"number","x-mcp-header":"F"},
		"outer":{"type":"object","properties":{"inner":{"type":"string","x-mcp-header":"Inner"}}},
		"plain":{"type":"string"}}}`), &schema)
	bindings := paramBindings([]*mcp.Tool{{Name: "t", InputSchema: schema}, {Name: "u", InputSchema: map[string]any{"type": "object"}}})
	if len(bindings) != 1 || len(bindings["t"]) != 5 {
		t.Fatalf("bindings %v", bindings)
	}
	ctx := context.WithValue(context.Background(), paramHeadersKey{}, bindings["t"])
	h := http.Header{}
	setParamHeaders(ctx, h, json.RawMessage(`{"name":"t","arguments":{"region":"zürich","n":42,"ok":true,"f":1.5,"outer":{"inner":" padded"},"plain":"x"}}`))
	want := http.Header{
		"Mcp-Param-Region": {"=?base64?esO8cmljaA==?="},
		"Mcp-Param-N":      {"42"},
		"Mcp-Param-Ok":     {"true"},
		"Mcp-Param-Inner":  {"=?base64?IHBhZGRlZA==?="},
	}
	if len(h) != len(want) {
		t.Fatalf("headers %v, want %v", h, want)
	}
	for k, v := range want {
		if h.Get(k) != v[0] {
			t.Errorf("%s: %q, want %q", k, h.Get(k), v[0])
		}
	}
	h = http.Header{}
	setParamHeaders(ctx, h, json.RawMessage(`{"name":"t","arguments":{"region":"=?base64?x?="}}`))
	if h.Get("Mcp-Param-Region") != "=?base64?PT9iYXNlNjQ/eD89?=" {
		t.Errorf("a value shaped like the base64 form: %q", h.Get("Mcp-Param-Region"))
	}
}
