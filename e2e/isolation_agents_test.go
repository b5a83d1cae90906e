package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bScript is a server with its own resources, template, prompt and
// completions, each answering with a marker that names it.
func bScript() map[string]any {
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	return map[string]any{"answers": []map[string]any{
		{"method": "tools/list", "result": map[string]any{"tools": []any{
			map[string]any{"name": "work", "inputSchema": map[string]any{"type": "object"}}}}},
		{"method": "tools/call", "result": map[string]any{"content": []any{text("from-b-tool")}}},
		{"method": "resources/list", "result": map[string]any{"resources": []any{
			map[string]any{"uri": "b://doc", "name": "doc"}}}},
		{"method": "resources/templates/list", "result": map[string]any{"resourceTemplates": []any{
			map[string]any{"uriTemplate": "b://items/{id}", "name": "items"}}}},
		{"method": "resources/read", "result": map[string]any{"contents": []any{
			map[string]any{"uri": "b://doc", "text": "from-b-resource"}}}},
		{"method": "prompts/list", "result": map[string]any{"prompts": []any{
			map[string]any{"name": "brief", "arguments": []any{map[string]any{"name": "topic"}}}}}},
		{"method": "prompts/get", "result": map[string]any{"messages": []any{
			map[string]any{"role": "user", "content": text("from-b-prompt")}}}},
		{"method": "completion/complete", "result": map[string]any{"completion": map[string]any{"values": []any{"from-b-completion"}}}},
	}}
}

// TestAgentViewsCoverEveryCapability: an agent whose rules hide a server's
// tools cannot list or read its resources and templates, list or get its
// prompts, or complete against them; the agent that sees the server can.
func TestAgentViewsCoverEveryCapability(t *testing.T) {
	t.Parallel()
	const tokA, tokB = "agent-a-token-0123456789", "agent-b-token-9876543210"
	s := startSwitchboard(t, map[string]any{
		"mcpServers": map[string]any{"a": fixtureServer("a"), "b": hostileServer(t, bScript())},
		"agents": map[string]any{"list": []any{
			map[string]any{"id": "alpha", "tokens": []string{tokA}, "tools": map[string]any{"allow": []string{"mcp_a_*"}}},
			map[string]any{"id": "beta", "tokens": []string{tokB}, "tools": map[string]any{"allow": []string{"mcp_b_*"}}},
		}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alpha, err := connectWithToken(t, "http://"+s.addr+"/agents/alpha/mcp", tokA)
	if err != nil {
		t.Fatal(err)
	}
	beta, err := connectWithToken(t, "http://"+s.addr+"/agents/beta/mcp", tokB)
	if err != nil {
		t.Fatal(err)
	}
	waitListed(t, beta, "mcp_b_work")
	waitListed(t, alpha, "mcp_a_echo")

	// reached lists what of b's an agent got: listed or answered.
	reached := func(cs *mcp.ClientSession) []string {
		var got []string
		if r, err := cs.ListResources(ctx, nil); err == nil {
			for _, x := range r.Resources {
				if strings.HasPrefix(x.URI, "b://") {
					got = append(got, "listed resource "+x.URI)
				}
			}
		}
		if r, err := cs.ListResourceTemplates(ctx, nil); err == nil {
			for _, x := range r.ResourceTemplates {
				if strings.HasPrefix(x.URITemplate, "b://") {
					got = append(got, "listed template "+x.URITemplate)
				}
			}
		}
		if r, err := cs.ListPrompts(ctx, nil); err == nil {
			for _, x := range r.Prompts {
				if strings.HasPrefix(x.Name, "mcp_b_") {
					got = append(got, "listed prompt "+x.Name)
				}
			}
		}
		for _, uri := range []string{"b://doc", "b://items/7"} {
			if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil && strings.Contains(js(r), "from-b-resource") {
				got = append(got, "read "+uri)
			}
		}
		if r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp_b_brief", Arguments: map[string]string{"topic": "x"}}); err == nil && strings.Contains(js(r), "from-b-prompt") {
			got = append(got, "got prompt mcp_b_brief")
		}
		for _, ref := range []*mcp.CompleteReference{
			{Type: "ref/prompt", Name: "mcp_b_brief"},
			{Type: "ref/resource", URI: "b://items/{id}"},
			{Type: "ref/resource", URI: "b://doc"},
		} {
			r, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "x"}})
			if err == nil && strings.Contains(js(r), "from-b-completion") {
				got = append(got, "completed "+ref.Type+" "+ref.Name+ref.URI)
			}
		}
		return got
	}
	gotA, gotB := reached(alpha), reached(beta)
	t.Logf("agent alpha (b hidden) reached %d of b's: %v", len(gotA), gotA)
	t.Logf("agent beta (b shown) reached %d of b's: %v", len(gotB), gotB)
	if len(gotA) != 0 {
		t.Errorf("agent alpha reached b's capabilities: %v", gotA)
	}
	// The same requests work where b is shown: the check above can fail.
	if len(gotB) < 8 {
		t.Errorf("agent beta reached only %v of b's, want listing, reads, prompt and completions", gotB)
	}
}

// TestNoInjectedProgressAcrossServers: while one session's call runs on
// server p, another session calls a hostile server that sprays progress
// notifications with every token switchboard might have minted, and log
// messages. The first session sees exactly its own progress and none of
// the spray; the second none either.
func TestNoInjectedProgressAcrossServers(t *testing.T) {
	t.Parallel()
	var spray []any
	for i := range 64 {
		for _, tok := range []any{"sb-" + strconv.FormatInt(int64(i), 36), strconv.Itoa(i), i} {
			spray = append(spray, map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": tok, "progress": 99, "message": "INJECTED"}})
		}
	}
	spray = append(spray, map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
		"params": map[string]any{"level": "emergency", "logger": "x", "data": "INJECTED"}})
	script := map[string]any{"answers": []map[string]any{
		{"method": "tools/list", "result": map[string]any{"tools": []any{map[string]any{"name": "spray", "inputSchema": map[string]any{"type": "object"}}}}},
		{"method": "tools/call", "before": spray, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "sprayed"}}}},
	}}
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"p": fixtureServer("p"), "h": hostileServer(t, script)}})

	type seen struct {
		mu       sync.Mutex
		progress []string
		injected atomic.Int32
	}
	mk := func(g *seen) *mcp.ClientSession {
		return connectHTTP(t, "http://"+s.addr+"/mcp", &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				g.mu.Lock()
				g.progress = append(g.progress, fmt.Sprint(r.Params.ProgressToken, ":", r.Params.Message))
				g.mu.Unlock()
				if strings.Contains(r.Params.Message, "INJECTED") {
					g.injected.Add(1)
				}
			},
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
				if strings.Contains(js(r.Params), "INJECTED") {
					g.injected.Add(1)
				}
			},
		})
	}
	var victim, attacker seen
	cv, ca := mk(&victim), mk(&attacker)
	waitListed(t, cv, "mcp_p_progress", "mcp_h_spray")
	for _, cs := range []*mcp.ClientSession{cv, ca} {
		if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
	}
	const steps = 10
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "mcp_p_progress", Arguments: map[string]any{"steps": steps, "delay_ms": 50}}
		p.SetProgressToken("victim")
		_, err := cv.CallTool(context.Background(), p)
		done <- err
	}()
	for range 5 {
		p := &mcp.CallToolParams{Name: "mcp_h_spray", Arguments: map[string]any{}}
		p.SetProgressToken("attacker")
		mustCallParams(t, ca, p)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let stray notifications arrive, if any were sent
	victim.mu.Lock()
	defer victim.mu.Unlock()
	t.Logf("victim got %d progress notifications, %d injected; attacker %d injected", len(victim.progress), victim.injected.Load(), attacker.injected.Load())
	if victim.injected.Load() != 0 || len(victim.progress) != steps {
		t.Errorf("victim's notifications: %v (%d injected), want exactly its %d steps", victim.progress, victim.injected.Load(), steps)
	}
	for _, p := range victim.progress {
		if !strings.HasPrefix(p, "victim:") {
			t.Errorf("victim got progress %q under another token", p)
		}
	}
}

func mustCallParams(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	return res
}
