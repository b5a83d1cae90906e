package sanitize_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// joinRedactor redacts "SECRETVALUE" in a text, and across texts.
type joinRedactor struct{}

func (joinRedactor) Redact(s string) string { return strings.ReplaceAll(s, "SECRETVALUE", "[R]") }

func (joinRedactor) RedactJoined(parts []string) []string {
	joined := strings.Join(parts, "")
	i := strings.Index(joined, "SECRETVALUE")
	if i < 0 {
		return parts
	}
	out := append([]string(nil), parts...)
	base := 0
	for k, p := range parts {
		from, to := max(i, base)-base, min(i+len("SECRETVALUE"), base+len(p))-base
		if from < to {
			out[k] = p[:from] + "[R]" + p[to:]
		}
		base += len(p)
	}
	return out
}

func TestSecretSplitAcrossBlocks(t *testing.T) {
	opt := sanitize.Options{Wrap: true, Redactor: joinRedactor{}}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a SECRET"}, &mcp.TextContent{Text: "VALUE b"}}}
	out, _, err := sanitize.ToolResult(res, sanitize.Source{Server: "s", Tool: "t"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range out.Content {
		if s := c.(*mcp.TextContent).Text; strings.Contains(s, "SECRET") || strings.Contains(s, "VALUE") {
			t.Errorf("a piece of the split secret reached the client: %q", s)
		}
	}
	if res.Content[0].(*mcp.TextContent).Text != "a SECRET" {
		t.Error("ToolResult changed its input")
	}
	pr, _, err := sanitize.PromptResult(&mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.TextContent{Text: "x SECRETV"}}, {Role: "user", Content: &mcp.TextContent{Text: "ALUE y"}},
	}}, sanitize.Source{Server: "s", Prompt: "p"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	rr, _, err := sanitize.ReadResult(&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "a://1", Text: "SECR"}, {URI: "a://2", Text: "ETVALUE"}}}, "s", opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{js(t, pr), js(t, rr)} {
		if strings.Contains(s, "SECR") || strings.Contains(s, "ALUE") {
			t.Errorf("a piece of the split secret reached the client: %s", s)
		}
	}
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
