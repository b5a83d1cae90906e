package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// bearerRecorder adds a bearer token to every request and records the
// exchange.
type bearerRecorder struct {
	token string
	rec   *hopRecorder
}

func (b bearerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.rec.RoundTrip(req)
}

// startCallerHAProxy runs HAProxy in front of the replicas, balancing by
// a consistent hash of the Authorization header: every request of one
// caller reaches one replica, which keeps what that caller found.
func startCallerHAProxy(t *testing.T, bin string, names []string, replicas map[string]*sb) string {
	t.Helper()
	port := freePort(t)
	var b strings.Builder
	fmt.Fprintf(&b, `global
	log stderr format raw local0 info

defaults
	mode http
	log global
	timeout connect 1s
	timeout client 1m
	timeout server 1m
	http-reuse never

listen mcp
	bind 127.0.0.1:%d
	balance hdr(authorization)
	hash-type consistent
	http-response set-header %s %%s
`, port, servedByHeader)
	for _, n := range names {
		fmt.Fprintf(&b, "\tserver %s %s\n", n, replicas[n].addr)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, dir, nil, bin, "-db", "-f", cfg)
	testutil.Eventually(t, 10*time.Second, "HAProxy listening", func() bool {
		select {
		case <-p.done:
			t.Fatalf("haproxy exited: %v\n%s", p.err, p.Stderr())
		default:
		}
		c, err := dialLoopback(port)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// TestDiscoveryStatelessReplicas: the same as TestDiscoveryStateless
// through two replicas behind a load balancer that sends each caller
// (its bearer token) to one replica: the 2026-07-28 client finds a tool,
// sees it in its next tools/list and calls it by name, every request
// answered by the same replica.
func TestDiscoveryStatelessReplicas(t *testing.T) {
	t.Parallel()
	hap := haproxy(t)
	const tok = "replicated-caller-token-0123456789"
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"mcpServers": map[string]any{"fx": fixtureServer("fx")},
		"auth":       map[string]any{"tokens": []string{tok}},
		"discovery":  map[string]any{"mode": "search"},
	})
	names := []string{"r1", "r2"}
	replicas := map[string]*sb{}
	for _, n := range names {
		dir := t.TempDir()
		replicas[n] = startSwitchboardIn(t, dir, dir, nil, nil, "--config", cfg, "--replica", n)
	}
	url := startCallerHAProxy(t, hap, names, replicas)
	rec := &hopRecorder{base: &http.Transport{}}
	t.Cleanup(rec.base.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-stateless-replicas", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRecorder{tok, rec}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	var found []string
	testutil.Eventually(t, 20*time.Second, "find_tools finds mcp_fx_add", func() bool {
		found = findTools(t, cs, "add two numbers together")
		return slices.Contains(found, "mcp_fx_add")
	})
	listed := listTools(t, cs)
	if listed["mcp_fx_add"] == nil {
		t.Fatalf("after find_tools %v, the next tools/list through the replicas is %v: want mcp_fx_add in it", found, keys(listed))
	}
	if r := mustCall(t, cs, "mcp_fx_add", map[string]any{"a": 4, "b": 5}); r.IsError || !strings.Contains(textOf(r), "9") {
		t.Errorf("add called by name: %s", js(r))
	}
	servedBy := map[string]int{}
	for _, h := range rec.all() {
		servedBy[h.servedBy]++
	}
	t.Logf("requests by replica: %v", servedBy)
	if len(servedBy) != 1 || servedBy[""] > 0 {
		t.Errorf("one caller's requests were answered by %v, want one replica", servedBy)
	}
}
