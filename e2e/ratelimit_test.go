package e2e

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRateLimitSurvivesReinitialize: a rate-limit budget belongs to the
// caller (the token's value, or the endpoint without tokens), never to a
// session: a client that spent its budget and initializes anew is still
// limited, and so is a token whose place in auth.tokens a reload moved.
func TestRateLimitSurvivesReinitialize(t *testing.T) {
	t.Parallel()
	spend := func(t *testing.T, connect func() *mcp.ClientSession, what string) {
		t.Helper()
		first := connect()
		for i := range 2 {
			if res := mustCall(t, first, "mcp_f_add", map[string]any{"a": 1, "b": i}); res.IsError {
				t.Fatalf("%s: call %d within the limit: %s", what, i+1, js(res))
			}
		}
		second := connect()
		res := mustCall(t, second, "mcp_f_add", map[string]any{"a": 1, "b": 2})
		if !res.IsError || !strings.Contains(textOf(res), "rate limit exceeded; retry in") {
			t.Errorf("%s: the third call, from a new session, at 2 calls a minute: %s, want the rate-limit error", what, js(res))
		}
	}

	t.Run("endpoint", func(t *testing.T) {
		t.Parallel()
		s := startSwitchboard(t, map[string]any{
			"mcpServers": map[string]any{"f": fixtureServer("f")},
			"limits":     map[string]any{"callsPerMinute": 2},
		})
		spend(t, func() *mcp.ClientSession { return s.client(t, nil) }, "without tokens")
	})

	t.Run("token", func(t *testing.T) {
		t.Parallel()
		const tokA, tokB = "token-a-7d41c0e95b2f8a36", "token-b-0e6f93a1c7d2b584"
		cfg := func(tokens ...string) map[string]any {
			return map[string]any{
				"mcpServers": map[string]any{"f": fixtureServer("f")},
				"limits":     map[string]any{"callsPerMinute": 2},
				"auth":       map[string]any{"tokens": tokens},
			}
		}
		dir := t.TempDir()
		s := startSwitchboardIn(t, dir, dir, cfg("secret://env/TOK_A", "secret://env/TOK_B"), []string{"TOK_A=" + tokA, "TOK_B=" + tokB})
		url := "http://" + s.addr + "/mcp"
		connect := func(token string) func() *mcp.ClientSession {
			return func() *mcp.ClientSession {
				cs, err := connectWithToken(t, url, token)
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				return cs
			}
		}
		spend(t, connect(tokB), "token B")
		// A has a budget of its own.
		if res := mustCall(t, connect(tokA)(), "mcp_f_add", map[string]any{"a": 1, "b": 1}); res.IsError {
			t.Errorf("token A, while B is limited: %s", js(res))
		}
		// B moves to the first place in auth.tokens: its budget stays
		// spent, and it is not A's.
		g := s.gen(t)
		rewrite(t, s.config, cfg("secret://env/TOK_B", "secret://env/TOK_A"))
		s.waitGen(t, g+1)
		res := mustCall(t, connect(tokB)(), "mcp_f_add", map[string]any{"a": 1, "b": 2})
		if !res.IsError || !strings.Contains(textOf(res), "rate limit exceeded") {
			t.Errorf("token B after a reload moved it to the first place: %s, want the rate-limit error", js(res))
		}
	})
}
