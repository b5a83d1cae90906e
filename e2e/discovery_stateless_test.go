package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// connectModern connects a go-sdk client that negotiates 2026-07-28 (no
// session: every request stands alone) to url, with a bearer token.
func connectModern(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-stateless", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	return cs
}

// TestDiscoveryStateless: a 2026-07-28 client in search mode has no
// session, yet the tool it finds is in its next tools/list, whose
// cacheScope is private, and it calls the tool by name; another caller
// (another token) finds nothing listed for it.
func TestDiscoveryStateless(t *testing.T) {
	t.Parallel()
	const tokA, tokB = "stateless-token-a-0123456789", "stateless-token-b-0123456789"
	s := startSwitchboard(t, map[string]any{
		"mcpServers": map[string]any{"fx": fixtureServer("fx")},
		"auth":       map[string]any{"tokens": []string{tokA, tokB}},
		"discovery":  map[string]any{"mode": "search"},
	})
	a := connectModern(t, "http://"+s.addr+"/mcp", tokA)
	b := connectModern(t, "http://"+s.addr+"/mcp", tokB)
	if got := listTools(t, a); got["mcp_fx_add"] != nil {
		t.Fatalf("search mode lists mcp_fx_add before it is found: %v", keys(got))
	}
	var found []string
	testutil.Eventually(t, 20*time.Second, "find_tools finds mcp_fx_add", func() bool {
		found = findTools(t, a, "add two numbers together")
		return slices.Contains(found, "mcp_fx_add")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "mcp_fx_add") {
		t.Fatalf("after find_tools %v, the caller's next tools/list is %v: want mcp_fx_add in it", found, names)
	}
	if res.CacheScope != "private" || res.TTLMs != 0 {
		t.Errorf("a list that depends on what its caller found: cacheScope %q, ttlMs %d; want private, 0", res.CacheScope, res.TTLMs)
	}
	if r := mustCall(t, a, "mcp_fx_add", map[string]any{"a": 4, "b": 5}); r.IsError || !strings.Contains(textOf(r), "9") {
		t.Errorf("add called by name: %s", js(r))
	}
	if got := listTools(t, b); got["mcp_fx_add"] != nil {
		t.Errorf("another token's list shows what the first found: %v", keys(got))
	}
}
