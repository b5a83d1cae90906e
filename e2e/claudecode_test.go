package e2e

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"
)

// Claude Code (npm @anthropic-ai/claude-code, a native binary) runs here
// as a user runs it, against the fake Messages API of fakemodel_test.go:
// `claude -p` sessions with switchboard as their only MCP server, over
// stdio and over HTTP, and `claude mcp list`. Tool names reach it as
// mcp__<server>__<tool>, so switchboard's are mcp__switchboard__mcp_<s>_<t>.

// ccPrefix is the prefix Claude Code gives the tools of the MCP server
// these tests name "switchboard".
const ccPrefix = "mcp__switchboard__"

// newClaudeCode prepares Claude Code against a new fake model whose
// Messages API answers are scripted by respond.
func newClaudeCode(t *testing.T, respond func(*modelRequest) modelReply) *agent {
	t.Helper()
	bin := npmBin(t, "claude")
	m := startFakeModel(t, respond)
	return newAgent(t, bin, m,
		"ANTHROPIC_BASE_URL="+m.URL,
		"ANTHROPIC_API_KEY=dummy",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// By default Claude Code 2.1 defers MCP tools behind its
		// ToolSearch tool: their names go into the system prompt and the
		// tools array carries none of them. With tool search off, every
		// MCP tool is in the tools array of every request, which is what
		// these tests check and count.
		"ENABLE_TOOL_SEARCH=false",
	)
}

// claudePrint runs one `claude -p` session with exactly the given MCP
// servers (their tools allowed without asking) and returns its JSON result.
func claudePrint(t *testing.T, a *agent, servers map[string]any, prompt string) map[string]any {
	t.Helper()
	cfg := writeJSONFile(t, t.TempDir(), "mcp.json", map[string]any{"mcpServers": servers})
	var allow []string
	for name := range servers {
		allow = append(allow, "mcp__"+name)
	}
	sort.Strings(allow)
	out := a.run(t, "-p", prompt, "--mcp-config", cfg, "--strict-mcp-config",
		"--output-format", "json", "--allowedTools", strings.Join(allow, ","))
	var res map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
		t.Fatalf("claude -p printed no JSON result (%v):\n%s", err, tail(out, 4000))
	}
	return res
}

// publicTools lists a config's tools through a switchboard of its own
// (over /mcp), each name with an agent's prefix: what a session should
// offer the model.
func publicTools(t *testing.T, cfg map[string]any, prefix string) []string {
	t.Helper()
	s := startSwitchboard(t, cfg)
	cs := s.client(t, nil)
	var names []string
	for name := range listTools(t, cs) {
		names = append(names, prefix+name)
	}
	cs.Close()
	s.stop(10 * time.Second)
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("switchboard lists no tools")
	}
	return names
}

// switchboardEntry starts switchboard for transport ("stdio": Claude Code
// starts it; "http": the test does) and returns Claude Code's entry for it.
func switchboardEntry(t *testing.T, transport string, cfg map[string]any) map[string]any {
	t.Helper()
	if transport == "stdio" {
		return switchboardStdio(writeConfig(t, t.TempDir(), cfg))
	}
	s := startSwitchboard(t, cfg)
	return map[string]any{"type": "http", "url": "http://" + s.addr + "/mcp"}
}

// ccMarker is the text the scripted model has a tool echo.
const ccMarker = "through-switchboard-5c41"

// TestClaudeCodeThroughSwitchboard: with switchboard as its only MCP server
// (over stdio, and over HTTP), Claude Code's first model request offers
// every switchboard tool, and a tool_use the model answers with calls that
// tool through switchboard: its result is in the next request.
func TestClaudeCodeThroughSwitchboard(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{"fx": fixtureServer("fx")}}
	want := publicTools(t, cfg, ccPrefix)
	echo := ccPrefix + "mcp_fx_echo"
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			a := newClaudeCode(t, func(r *modelRequest) modelReply {
				if len(r.toolResults()) == 0 && r.hasTool(echo) {
					return modelReply{Tool: echo, Input: map[string]any{"text": ccMarker}}
				}
				return modelReply{Text: "finished"}
			})
			res := claudePrint(t, a, map[string]any{"switchboard": switchboardEntry(t, transport, cfg)}, "Echo the marker.")
			turns := a.model.turns()
			if len(turns) == 0 {
				t.Fatalf("Claude Code made no model request; result %v", res)
			}
			first := withPrefix(turns[0].Tools, ccPrefix)
			if l := lacking(want, first); len(l) > 0 {
				t.Errorf("the first request offers %d of %d switchboard tools; it lacks %v", len(first), len(want), l)
			}
			if len(turns) < 2 {
				t.Fatalf("no request after the tool_use (%d requests); result %v", len(turns), res)
			}
			results := turns[1].toolResults()
			if len(results) != 1 || !results[0].resultOf(echo) {
				t.Fatalf("the second request's tool results: %+v", results)
			}
			if text := results[0].resultText(); results[0].IsError || !strings.Contains(text, ccMarker) {
				t.Errorf("%s answered %q (is_error %v), want the marker", echo, text, results[0].IsError)
			}
			if res["result"] != "finished" || res["is_error"] == true {
				t.Errorf("session result %v, is_error %v", res["result"], res["is_error"])
			}
		})
	}
}

// TestClaudeCodeSearchMode: in search mode Claude Code's first request
// offers only switchboard's own find_tools and call_tool; the model calls
// find_tools, switchboard adds the tools found to the session's list and
// sends list_changed, and the next request offers the tool found, which the
// model then calls by name.
//
// Seen with Claude Code 2.1.332, which speaks 2026-07-28 to switchboard on
// both transports: over stdio list_changed arrives before find_tools'
// result, but Claude Code lists tools again while it already sends the next
// request, so the tool is offered one request later; over HTTP every
// request is stateless, no list_changed reaches its subscriptions/listen
// stream and it never lists tools again. When the tool is not offered, the
// script calls it through switchboard_call_tool instead.
func TestClaudeCodeSearchMode(t *testing.T) {
	cfg := map[string]any{
		"discovery":  map[string]any{"mode": "search"},
		"mcpServers": map[string]any{"fx": fixtureServer("fx")},
	}
	find, call := ccPrefix+"switchboard_find_tools", ccPrefix+"switchboard_call_tool"
	echo := ccPrefix + "mcp_fx_echo"
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			a := newClaudeCode(t, func(r *modelRequest) modelReply {
				results := r.toolResults()
				switch {
				case len(results) == 0 && r.hasTool(find):
					return modelReply{Tool: find, Input: map[string]any{"query": "echo text back"}}
				case len(results) == 1 && results[0].resultOf(find) && r.hasTool(echo):
					return modelReply{Tool: echo, Input: map[string]any{"text": ccMarker}}
				case len(results) == 1 && results[0].resultOf(find):
					// Not listed yet: call it through call_tool, and see
					// whether a later request lists it.
					return modelReply{Tool: call, Input: map[string]any{"name": "mcp_fx_echo", "arguments": map[string]any{"text": ccMarker}}}
				}
				return modelReply{Text: "finished"}
			})
			res := claudePrint(t, a, map[string]any{"switchboard": switchboardEntry(t, transport, cfg)}, "Find a tool that echoes text, then echo the marker.")
			turns := a.model.turns()
			if len(turns) < 3 {
				t.Fatalf("%d model requests, want 3; result %v", len(turns), res)
			}
			if got, want := withPrefix(turns[0].Tools, ccPrefix), []string{call, find}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("the first request offers %v, want only %v", got, want)
			}
			found := turns[1].toolResults()
			if len(found) != 1 || !found[0].resultOf(find) || !strings.Contains(found[0].resultText(), "mcp_fx_echo") {
				t.Fatalf("find_tools' result in the second request: %+v", found)
			}
			offered := false
			for _, r := range turns[1:] {
				offered = offered || r.hasTool(echo)
			}
			switch {
			case offered:
			case transport == "stdio":
				// Claude Code lists again after list_changed, one request
				// late: a later request must offer the tool.
				t.Errorf("no request after find_tools (and list_changed) offers %s", echo)
			default:
				// Over HTTP each 2026-07-28 request is stateless: the found
				// set belongs to a session the client does not have, so its
				// next list cannot hold it (issue: found tools keyed to the
				// caller). The call above went through call_tool.
				t.Logf("over %s the found tool is not offered in a later request; it was called through call_tool", transport)
			}
			last := turns[2].toolResults()
			if len(last) != 1 || last[0].IsError || !strings.Contains(last[0].resultText(), ccMarker) {
				t.Errorf("the echo call's result in the third request: %+v", last)
			}
		})
	}
}

// TestClaudeCodeMCPList: `claude mcp list` health-checks switchboard,
// added with `claude mcp add-json`, and shows it connected, over stdio and
// over HTTP.
func TestClaudeCodeMCPList(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{"fx": fixtureServer("fx")}}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			a := newClaudeCode(t, nil)
			entry, err := json.Marshal(switchboardEntry(t, transport, cfg))
			if err != nil {
				t.Fatal(err)
			}
			a.run(t, "mcp", "add-json", "--scope", "user", "switchboard", string(entry))
			out := a.run(t, "mcp", "list")
			var line string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "switchboard:") {
					line = l
				}
			}
			if !strings.Contains(line, "✔") || !strings.Contains(line, "Connected") {
				t.Errorf("claude mcp list does not show switchboard connected:\n%s", out)
			}
		})
	}
}
