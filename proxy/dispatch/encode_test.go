package dispatch

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzAppendTextResult: a text-only result written by hand is
// MarshalJSON's bytes exactly (typed: as the session would finish it for
// a 2026-07-28 client); anything else is left to MarshalJSON.
func FuzzAppendTextResult(f *testing.F) {
	f.Add("hi", "", false, false, false)
	f.Add("hi", "", false, false, true)
	f.Add("<a & b>\n\t\"q\" \\ \u2028 \u2029 \x7f \x00 \xff é 😀", "second", true, false, true)
	f.Add("", "", false, true, false)
	f.Fuzz(func(t *testing.T, a, b string, isError, meta, typed bool) {
		r := &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: a}}}
		if b != "" {
			r.Content = append(r.Content, &mcp.TextContent{Text: b})
		}
		if meta {
			r.Content = append(r.Content, &mcp.TextContent{Text: b, Meta: mcp.Meta{"k": a}})
		}
		var server json.RawMessage
		want, err := r.MarshalJSON()
		if typed {
			// As the session finishes a 2026-07-28 answer: _meta names
			// the server, and resultType goes first.
			info := &mcp.Implementation{Name: "switchboard", Version: a}
			server, _ = json.Marshal(info)
			cp := *r
			cp.Meta = mcp.Meta{mcp.MetaKeyServerInfo: info}
			want, err = cp.MarshalJSON()
			want = append([]byte(`{"resultType":"complete",`), want[1:]...)
		}
		if err != nil {
			t.Fatal(err)
		}
		got := appendTextResult(nil, r, server)
		if meta {
			if got != nil {
				t.Fatalf("content with _meta written by hand: %s", got)
			}
			return
		}
		if string(got) != string(want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// TestAppendTextResultLeaves: what the hand-written path leaves to
// MarshalJSON.
func TestAppendTextResultLeaves(t *testing.T) {
	text := []mcp.Content{&mcp.TextContent{Text: "x"}}
	for name, r := range map[string]*mcp.CallToolResult{
		"no content":         {},
		"structured content": {Content: text, StructuredContent: map[string]any{"a": 1}},
		"result _meta":       {Content: text, Meta: mcp.Meta{"k": "v"}},
		"annotations":        {Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}},
		"an image":           {Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
	} {
		if got := appendTextResult(nil, r, json.RawMessage(`{"name":"switchboard"}`)); got != nil {
			t.Errorf("%s: written by hand: %s", name, got)
		}
	}
}
