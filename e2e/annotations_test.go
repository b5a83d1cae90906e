package e2e

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAnnotationPolicyWithLyingServers: two fixture servers mark env and
// env_all, which read the process environment out, readOnlyHint true and
// destructiveHint false. Server t is trusted (trustAnnotations), server u
// is not. A readOnly agent sees t's read-only tools, the lie included (a
// trusted server is believed), except env, whose config override says
// readOnlyHint false; of u it sees only add, which a config override calls
// read-only, and none of what u claims itself. An agent that denies
// class:destructive sees t's tools that do not claim to be destructive
// and, of u's, again only the overridden add. Calls to hidden tools are
// refused as unknown tools, and the default view shows clients the
// operator's annotations.
func TestAnnotationPolicyWithLyingServers(t *testing.T) {
	t.Parallel()
	const tokAll, tokRO, tokND = "default-view-token-0123456789", "read-only-token-0123456789", "no-destroy-token-0123456789"
	lie := []string{"--claim-read-only", "env,env_all"}
	trusted := fixtureServer("t", lie...)
	trusted["trustAnnotations"] = true
	trusted["annotations"] = map[string]any{"env": map[string]any{"readOnlyHint": false, "destructiveHint": true}}
	untrusted := fixtureServer("u", lie...)
	untrusted["annotations"] = map[string]any{"add": map[string]any{"readOnlyHint": true}}
	s := startSwitchboard(t, map[string]any{
		"mcpServers": map[string]any{"t": trusted, "u": untrusted},
		"auth":       map[string]any{"tokens": []string{tokAll}},
		"agents": map[string]any{"list": []any{
			map[string]any{"id": "ro", "tokens": []string{tokRO}, "readOnly": true},
			map[string]any{"id": "nd", "tokens": []string{tokND}, "tools": map[string]any{"deny": []string{"class:destructive"}}},
		}},
	})
	all, err := connectWithToken(t, "http://"+s.addr+"/mcp", tokAll)
	if err != nil {
		t.Fatal(err)
	}
	waitListed(t, all, "mcp_t_echo", "mcp_u_echo", "mcp_t_env", "mcp_u_env_all")

	ro, err := connectWithToken(t, "http://"+s.addr+"/agents/ro/mcp", tokRO)
	if err != nil {
		t.Fatal(err)
	}
	nd, err := connectWithToken(t, "http://"+s.addr+"/agents/nd/mcp", tokND)
	if err != nil {
		t.Fatal(err)
	}
	upstream := func(cs *mcp.ClientSession) []string {
		var names []string
		for name := range listTools(t, cs) {
			if strings.HasPrefix(name, "mcp_") {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		return names
	}
	want := []string{"mcp_t_add", "mcp_t_echo", "mcp_t_env_all", "mcp_u_add"}
	if got := upstream(ro); !slices.Equal(got, want) {
		t.Errorf("readOnly agent lists %v, want %v", got, want)
	}
	// Not destructive: t's read-only tools (env_all's claim believed);
	// env is overridden destructive, and t's tools without annotations
	// take the protocol's default (destructive). Of u, only the override.
	if got := upstream(nd); !slices.Equal(got, want) {
		t.Errorf("agent denying class:destructive lists %v, want %v", got, want)
	}

	for _, c := range []struct {
		who  string
		cs   *mcp.ClientSession
		tool string
		args any
	}{
		{"ro", ro, "mcp_u_env_all", map[string]any{}},
		{"ro", ro, "mcp_u_env", map[string]any{"name": "HOME"}},
		{"ro", ro, "mcp_t_env", map[string]any{"name": "HOME"}},
		{"ro", ro, "mcp_t_pid", map[string]any{}},
		{"nd", nd, "mcp_u_echo", map[string]any{"text": "x"}},
		{"nd", nd, "mcp_t_env", map[string]any{"name": "HOME"}},
	} {
		res, err := callTool(t, c.cs, c.tool, c.args)
		if err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("agent %s calling hidden %s: got %v, %v; want an unknown-tool error", c.who, c.tool, js(res), err)
		}
	}
	// What the views show can be called.
	for _, cs := range []*mcp.ClientSession{ro, nd} {
		if res, err := callTool(t, cs, "mcp_u_add", map[string]any{"a": 2, "b": 3}); err != nil || res.IsError {
			t.Errorf("calling mcp_u_add: %v, %v", js(res), err)
		}
	}

	// The default view has no rule: it lists everything, and shows the
	// override's annotations, not the server's lie.
	env := listTools(t, all)["mcp_t_env"]
	if env == nil || env.Annotations == nil || env.Annotations.ReadOnlyHint || env.Annotations.DestructiveHint == nil || !*env.Annotations.DestructiveHint {
		t.Errorf("default view shows mcp_t_env's annotations as %v, want the override (readOnlyHint false, destructiveHint true)", js(env))
	}
}
