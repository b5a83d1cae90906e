package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestAdminHidesAgentNames: with an admin token configured, /status and
// /metrics name no agent to a request without it (they count the agents'
// views and sessions, and keep every other field and series), and name
// them all with it.
func TestAdminHidesAgentNames(t *testing.T) {
	t.Parallel()
	const token, agent = "admin-token-0123456789", "payroll-bot-7f3a"
	s := startSwitchboard(t, map[string]any{
		"mcpServers": map[string]any{"fx": fixtureServer("fx")},
		"agents":     map[string]any{"list": []any{map[string]any{"id": agent}}},
		"admin":      map[string]any{"reloadToken": token},
	})
	cs := connectHTTP(t, "http://"+s.addr+"/agents/"+agent+"/mcp", nil)
	waitListed(t, cs, "mcp_fx_echo")

	get := func(path, bearer string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.admin+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	// With the token: the agent is named (the series appear once the
	// session is counted).
	testutil.Eventually(t, 10*time.Second, "the agent's view named with the token", func() bool {
		return strings.Contains(get("/status", token), agent) && strings.Contains(get("/metrics", token), `view="`+agent+`"`)
	})
	for _, bearer := range []string{"", "wrong-token"} {
		st := get("/status", bearer)
		if strings.Contains(st, agent) {
			t.Errorf("/status with bearer %q names the agent: %s", bearer, st)
		}
		if !strings.Contains(st, `"agentViews": {`) || !strings.Contains(st, `"name": "fx"`) {
			t.Errorf("/status with bearer %q: want the agents counted and the servers listed: %s", bearer, st)
		}
		m := get("/metrics", bearer)
		if strings.Contains(m, agent) {
			t.Errorf("/metrics with bearer %q names the agent", bearer)
		}
		if !strings.Contains(m, `view="default"`) || !strings.Contains(m, `switchboard_upstream_state`) {
			t.Errorf("/metrics with bearer %q lost the public series:\n%s", bearer, m)
		}
	}
}
