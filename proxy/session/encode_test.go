package session

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEncodeAsMarshal: the results encode writes without json.Marshal come
// out byte for byte as json.Marshal writes them.
func TestEncodeAsMarshal(t *testing.T) {
	text := "<a & b> \u2028 \"q\"\n\xff"
	for _, v := range []any{
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}},
		&mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: text, Annotations: &mcp.Annotations{Priority: 0.5}}, &mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}},
			StructuredContent: map[string]any{"text": text, "n": 1.5, "list": []any{"<", nil, true}},
			IsError:           true,
			Meta:              mcp.Meta{"k": "<v>"},
		},
		&mcp.CallToolResult{},
		(*mcp.CallToolResult)(nil),
		&mcp.GetPromptResult{Description: text, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}},
		(*mcp.GetPromptResult)(nil),
		&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///a", Text: text}}},
		(*mcp.ReadResourceResult)(nil),
		&mcp.ListToolsResult{Tools: []*mcp.Tool{}},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encode(v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%T:\n got %s\nwant %s", v, got, want)
		}
	}
}
