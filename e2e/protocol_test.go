package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

func promptText(r *mcp.GetPromptResult) string {
	var b strings.Builder
	for _, m := range r.Messages {
		if tc, ok := m.Content.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestPromptsResourcesThroughProxy: prompts are namespaced and routed,
// resources keep their URIs and are routed by owner (templates included),
// read text is wrapped, and the built-in resource-context prompt gathers
// every resource.
func TestPromptsResourcesThroughProxy(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"f": fixtureServer("f"),
		"g": map[string]any{"command": fixture, "args": []string{"--name", "g"}, "resources": false},
	}})
	cs := s.client(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	testutil.Eventually(t, 20*time.Second, "prompts listed", func() bool {
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			return false
		}
		names := map[string]bool{}
		for _, p := range res.Prompts {
			names[p.Name] = true
		}
		return names["mcp_f_greet"] && names["mcp_g_greet"] && names["switchboard_resource_context"]
	})
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp_f_greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := promptText(pr); !strings.Contains(txt, "Hello, Ada!") || !strings.HasPrefix(txt, "<<<EXTERNAL_UNTRUSTED_CONTENT") {
		t.Errorf("prompt text: %q", txt)
	}

	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rl.Resources) != 1 || rl.Resources[0].URI != "fixture://static/hello" || !strings.HasSuffix(rl.Resources[0].Title, "(f)") {
		t.Fatalf("resources (g has resources off): %s", js(rl.Resources))
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "fixture://items/{id}" {
		t.Fatalf("templates: %v %s", err, js(tl))
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://static/hello"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "hello from f") || !strings.HasPrefix(rr.Contents[0].Text, "<<<EXTERNAL_UNTRUSTED_CONTENT") {
		t.Errorf("read: %s", js(rr))
	}
	rt, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://items/42"})
	if err != nil || len(rt.Contents) == 0 || !strings.Contains(rt.Contents[0].Text, "42") {
		t.Errorf("template read: %v %s", err, js(rt))
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "other://nope"}); err == nil {
		t.Error("an unowned URI was read")
	}
	rc, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "switchboard_resource_context"})
	if err != nil {
		t.Fatal(err)
	}
	if txt := promptText(rc); !strings.Contains(txt, "hello from f") || strings.Count(txt, "<<<END_EXTERNAL_UNTRUSTED_CONTENT") != 1 {
		t.Errorf("resource context: %q", txt)
	}
}
