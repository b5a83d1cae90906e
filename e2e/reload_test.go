package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

func fixtureServer(name string, extra ...string) map[string]any {
	return map[string]any{"command": fixture, "args": append([]string{"--name", name}, extra...)}
}

// gen returns the config generation /status reports.
func (s *sb) gen(t *testing.T) int {
	t.Helper()
	g, _ := s.status(t)["gen"].(float64)
	return int(g)
}

func (s *sb) lastReload(t *testing.T) map[string]any {
	t.Helper()
	lr, _ := s.status(t)["lastReload"].(map[string]any)
	return lr
}

// rewrite replaces the config file in place (same inode).
func rewrite(t *testing.T, path string, cfg any) {
	t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// replaceByRename writes a new file beside path and renames it over path,
// as editors do.
func replaceByRename(t *testing.T, path string, cfg any) {
	t.Helper()
	b, _ := json.MarshalIndent(cfg, "", "  ")
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// listChangedCounter connects a client that counts tools/list_changed.
func listChangedClient(t *testing.T, s *sb, path string) (*mcp.ClientSession, *atomic.Int32) {
	var n atomic.Int32
	cs := connectHTTP(t, "http://"+s.addr+path, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { n.Add(1) },
	})
	return cs, &n
}

// waitGen waits until /status reports generation want.
func (s *sb) waitGen(t *testing.T, want int) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, fmt.Sprintf("config generation %d", want), func() bool { return s.gen(t) >= want })
}

// TestReloadEveryFileChangeKind edits the config in place, by rename-replace
// and by a ConfigMap-style ..data symlink swap: each reloads exactly once,
// connected clients get list_changed and see the new set.
func TestReloadEveryFileChangeKind(t *testing.T) {
	dir := t.TempDir()
	// ConfigMap layout: config.json -> ..data/config.json, ..data -> ..v1.
	mkVersion := func(name string, cfg any) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, name, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(servers ...string) map[string]any {
		m := map[string]any{}
		for _, s := range servers {
			m[s] = fixtureServer(s)
		}
		return map[string]any{"mcpServers": m}
	}
	mkVersion("..v1", cfg("a"))
	if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	cmPath := filepath.Join(dir, "config.json")
	if err := os.Symlink(filepath.Join("..data", "config.json"), cmPath); err != nil {
		t.Fatal(err)
	}
	s := &sb{dir: dir, config: cmPath}
	ready := filepath.Join(t.TempDir(), "ready")
	s.proc = start(t, dir, nil, switchboard, "serve", "--config", cmPath, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--ready-file", ready)
	parts := strings.Fields(waitFile(t, ready, 30*time.Second, s.proc))
	s.addr, s.admin = parts[0], parts[1]

	cs, changed := listChangedClient(t, s, "/mcp")
	testutil.Eventually(t, 20*time.Second, "a listed", func() bool { return listTools(t, cs)["mcp_a_echo"] != nil })

	// ConfigMap update: new version dir, new ..data symlink renamed over the old.
	before := changed.Load()
	mkVersion("..v2", cfg("a", "b"))
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	s.waitGen(t, 2)
	testutil.Eventually(t, 10*time.Second, "list_changed after the ConfigMap swap", func() bool { return changed.Load() > before })
	testutil.Eventually(t, 5*time.Second, "b listed", func() bool { return listTools(t, cs)["mcp_b_echo"] != nil })

	// Replace the symlinked layout by a plain file for the next two kinds.
	plain := filepath.Join(dir, "plain.json")
	b, _ := json.Marshal(cfg("a", "b"))
	if err := os.WriteFile(plain, b, 0o644); err != nil {
		t.Fatal(err)
	}
	renamed := time.Now()
	if err := os.Rename(plain, cmPath); err != nil { // replaces the symlink itself
		t.Fatal(err)
	}
	// The watcher sees the symlink replaced and reloads; the content is the
	// same, so the reload is skipped (/status lastReload: unchanged).
	testutil.Eventually(t, 10*time.Second, "the reload of the unchanged config skipped", func() bool {
		lr, _ := s.status(t)["lastReload"].(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(lr["at"]))
		return err == nil && lr["unchanged"] == true && !at.Before(renamed)
	})
	if g := s.gen(t); g != 2 {
		t.Errorf("an unchanged config bumped the generation to %d", g)
	}

	before = changed.Load()
	rewrite(t, cmPath, cfg("a", "b", "c"))
	s.waitGen(t, 3)
	testutil.Eventually(t, 10*time.Second, "c listed after in-place edit", func() bool { return listTools(t, cs)["mcp_c_echo"] != nil })

	replaceByRename(t, cmPath, cfg("a", "c"))
	s.waitGen(t, 4)
	testutil.Eventually(t, 10*time.Second, "b gone after rename-replace", func() bool { return listTools(t, cs)["mcp_b_echo"] == nil })
	// Nothing more is applied: a reload of a state in between (a file half
	// written, or none for a moment) would come within the watcher's
	// debounce (200 ms) of the last event. Nothing signals its absence, so
	// this waits three times that.
	time.Sleep(600 * time.Millisecond)
	if g := s.gen(t); g != 4 {
		t.Errorf("three changes gave generation %d, want 4 (each change reloads once)", g)
	}
	if changed.Load() <= before {
		t.Error("no list_changed after edits")
	}
}

// TestReloadSIGHUPAndInvalidConfig: SIGHUP reloads; an invalid edit keeps
// the old snapshot serving and /status shows the error with its path.
func TestReloadSIGHUPAndInvalidConfig(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"a": fixtureServer("a")}})
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "a listed", func() bool { return listTools(t, cs)["mcp_a_echo"] != nil })
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "SIGHUP reload recorded", func() bool {
		lr := s.lastReload(t)
		return lr != nil && strings.Contains(fmt.Sprint(lr["reason"]), "sighup")
	})

	if err := os.WriteFile(s.config, []byte(`{"mcpServers": {"a": {"command": "x", "toolTimeout": -1}, "b": {"type": "http"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "rejected reload in /status", func() bool {
		lr := s.lastReload(t)
		return lr != nil && lr["ok"] == false
	})
	lr := s.lastReload(t)
	for _, want := range []string{"mcpServers.a.toolTimeout", `mcpServers.b.url: required for transport "http"`} {
		if !strings.Contains(fmt.Sprint(lr["error"]), want) {
			t.Errorf("lastReload.error lacks %q: %v", want, lr["error"])
		}
	}
	if g := s.gen(t); g != 1 {
		t.Errorf("invalid config changed the generation to %d", g)
	}
	if res := mustCall(t, cs, "mcp_a_echo", map[string]any{"text": "old config"}); res.IsError {
		t.Errorf("old config stopped serving: %s", textOf(res))
	}
	if !strings.Contains(s.Stderr(), "reload rejected") {
		t.Error("rejected reload not logged")
	}
}

func pidOf(t *testing.T, cs *mcp.ClientSession, tool string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(unwrap(textOf(mustCall(t, cs, tool, map[string]any{})))))
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return pid
}

// TestReloadKeepsUnchangedUpstreamPID and replaces a changed one only after
// its in-flight call finished.
func TestReloadKeepsUnchangedUpstreamPID(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{"keep": fixtureServer("keep"), "change": fixtureServer("change")}}
	s := startSwitchboard(t, cfg)
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "listed", func() bool {
		tools := listTools(t, cs)
		return tools["mcp_change_sleep"] != nil && tools["mcp_keep_pid"] != nil
	})
	keepPID, changePID := pidOf(t, cs, "mcp_keep_pid"), pidOf(t, cs, "mcp_change_pid")

	type out struct {
		res *mcp.CallToolResult
		err error
	}
	inflight := make(chan out, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_change_sleep", Arguments: map[string]any{"ms": 2500}})
		inflight <- out{res, err}
	}()
	s.waitServer(t, "change", 10*time.Second, "the sleep call in flight", func(st serverState) bool { return st.InFlight > 0 })
	cfg["mcpServers"].(map[string]any)["change"] = fixtureServer("change", "--page-size", "3")
	rewrite(t, s.config, cfg)
	s.waitGen(t, 2)
	o := <-inflight
	if o.err != nil || o.res.IsError || !strings.Contains(textOf(o.res), "slept 2500 ms") {
		t.Fatalf("in-flight call disturbed by the reload: %v %s", o.err, js(o.res))
	}
	if got := pidOf(t, cs, "mcp_keep_pid"); got != keepPID {
		t.Errorf("unchanged server restarted: pid %d -> %d", keepPID, got)
	}
	testutil.Eventually(t, 10*time.Second, "changed server replaced", func() bool { return pidOf(t, cs, "mcp_change_pid") != changePID })
	testutil.Eventually(t, 15*time.Second, "old process stopped", func() bool { return !pidAlive(changePID) })
}

// TestReloadUnderLoad: 100 reloads (server added, removed, changed, policy
// changed) while clients keep calling an unchanged server: no call fails.
func TestReloadUnderLoad(t *testing.T) {
	base := func(i int) map[string]any {
		servers := map[string]any{"steady": fixtureServer("steady")}
		switch i % 3 {
		case 0:
			servers["extra"] = fixtureServer("extra")
		case 1:
			servers["extra"] = fixtureServer("extra", "--page-size", "5")
		}
		deny := []string{fmt.Sprintf("mcp_steady_nothing_%d", i)}
		return map[string]any{"mcpServers": servers, "tools": map[string]any{"deny": deny}}
	}
	s := startSwitchboard(t, base(0))
	var clients []*mcp.ClientSession
	for range 2 {
		clients = append(clients, s.client(t, nil))
	}
	testutil.Eventually(t, 20*time.Second, "steady listed", func() bool { return listTools(t, clients[0])["mcp_steady_echo"] != nil })

	stop := make(chan struct{})
	var calls, failures atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	for _, cs := range clients {
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					msg := fmt.Sprintf("w%d-%d", w, n)
					res, err := callTool(t, cs, "mcp_steady_echo", map[string]any{"text": msg})
					calls.Add(1)
					if err != nil || res.IsError || !strings.Contains(textOf(res), msg) {
						failures.Add(1)
						firstFailure.CompareAndSwap(nil, fmt.Sprintf("%v %s", err, js(res)))
					}
				}
			}()
		}
	}
	const reloads = 100
	for i := 1; i <= reloads; i++ {
		rewrite(t, s.config, base(i))
		s.waitGen(t, i+1)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d calls during %d reloads", calls.Load(), reloads)
	if calls.Load() < 100 {
		t.Errorf("only %d calls made", calls.Load())
	}
	if f := failures.Load(); f > 0 {
		t.Errorf("%d of %d calls failed during reloads; first: %v", f, calls.Load(), firstFailure.Load())
	}
}

// TestRemovedServerUnknownAfterRemoval: calls to a removed server fail only
// after it was removed, with the unknown-tool error.
func TestRemovedServerUnknownAfterRemoval(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"a": fixtureServer("a"), "gone": fixtureServer("gone")}})
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "listed", func() bool { return listTools(t, cs)["mcp_gone_echo"] != nil })
	mustCall(t, cs, "mcp_gone_echo", map[string]any{"text": "before"})
	rewrite(t, s.config, map[string]any{"mcpServers": map[string]any{"a": fixtureServer("a")}})
	s.waitGen(t, 2)
	_, err := callTool(t, cs, "mcp_gone_echo", map[string]any{"text": "after"})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "mcp_gone_echo"`) {
		t.Errorf("want unknown tool after removal, got %v", err)
	}
}

// TestAgentViews: two agents with different servers and policies see
// exactly their own tools; an agent overrides a default server; an unknown
// agent is 404.
func TestAgentViews(t *testing.T) {
	cfg := map[string]any{
		"mcpServers": map[string]any{"shared": fixtureServer("shared")},
		"tools":      map[string]any{"deny": []string{"mcp_*_crash"}},
		"agents": map[string]any{
			"list": []any{
				map[string]any{"id": "research",
					"mcp":   map[string]any{"servers": map[string]any{"search": fixtureServer("search")}},
					"tools": map[string]any{"allow": []string{"mcp_*_echo", "mcp_*_pid"}}},
				map[string]any{"id": "ops",
					"mcp":   map[string]any{"servers": map[string]any{"shared": fixtureServer("shared-override", "--extra-tools", "1")}},
					"tools": map[string]any{"deny": []string{"mcp_shared_echo"}}},
			},
		},
	}
	s := startSwitchboard(t, cfg)
	def := s.client(t, nil)
	research := connectHTTP(t, "http://"+s.addr+"/agents/research/mcp", nil)
	ops := connectHTTP(t, "http://"+s.addr+"/agents/ops/mcp", nil)
	testutil.Eventually(t, 20*time.Second, "views populated", func() bool {
		return listTools(t, research)["mcp_search_echo"] != nil && listTools(t, ops)["mcp_shared_t0001"] != nil &&
			listTools(t, def)["mcp_shared_echo"] != nil
	})
	for name := range listTools(t, research) {
		if !strings.HasSuffix(name, "_echo") && !strings.HasSuffix(name, "_pid") {
			t.Errorf("research sees %s outside its allow list", name)
		}
	}
	rt := listTools(t, research)
	if rt["mcp_shared_echo"] == nil || rt["mcp_search_echo"] == nil {
		t.Errorf("research lacks shared or its own server: %v", keys(rt))
	}
	if d := listTools(t, def); d["mcp_search_echo"] != nil || d["mcp_shared_crash"] != nil {
		t.Errorf("default view leaks agent servers or denied tools: %v", keys(d))
	}
	ot := listTools(t, ops)
	if ot["mcp_shared_echo"] != nil || ot["mcp_search_echo"] != nil {
		t.Errorf("ops sees denied or foreign tools: %v", keys(ot))
	}
	// The override is a separate process from the default "shared".
	if pidOf(t, ops, "mcp_shared_pid") == pidOf(t, def, "mcp_shared_pid") {
		t.Error("ops' override of shared runs in the default server's process")
	}
	// research shares the default server's process.
	if pidOf(t, research, "mcp_shared_pid") != pidOf(t, def, "mcp_shared_pid") {
		t.Error("a server shared by two views runs twice")
	}
	_, err := callTool(t, research, "mcp_shared_crash", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "mcp_shared_crash"`) {
		t.Errorf("hidden tool call: %v", err)
	}
	resp, err := http.Post("http://"+s.addr+"/agents/nobody/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown agent: status %d, want 404", resp.StatusCode)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectWithToken(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// TestDownstreamAuthAndRateLimit: tokens select and restrict views, missing
// or wrong tokens get 401 with WWW-Authenticate, and a rate limit is hit and
// recovered.
func TestDownstreamAuthAndRateLimit(t *testing.T) {
	cfg := map[string]any{
		"mcpServers": map[string]any{"a": fixtureServer("a")},
		"auth":       map[string]any{"tokens": []string{"secret://env/SB_ADMIN_TOKEN"}},
		"agents": map[string]any{"list": []any{
			map[string]any{"id": "bot", "tokens": []string{"bot-token-123456"},
				"tools":  map[string]any{"allow": []string{"mcp_a_echo"}},
				"limits": map[string]any{"callsPerMinute": 600, "burst": 2}},
			map[string]any{"id": "other", "tokens": []string{"other-token-654321"}},
		}},
	}
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, cfg, []string{"SB_ADMIN_TOKEN=admin-token-abcdef"})

	// A known and an unknown agent answer alike without a valid token: no
	// enumeration of the agents.
	for _, c := range []struct{ path, token string }{{"/mcp", ""}, {"/mcp", "wrong"}, {"/agents/bot/mcp", ""}, {"/agents/ghost/mcp", ""}, {"/agents/ghost/mcp", "wrong"}} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+c.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s with %q: status %d, WWW-Authenticate %q", c.path, c.token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if _, err := connectWithToken(t, "http://"+s.addr+"/agents/bot/mcp", "other-token-654321"); err == nil {
		t.Error("another agent's token opened bot's view")
	}
	adminCS, err := connectWithToken(t, "http://"+s.addr+"/mcp", "admin-token-abcdef")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "a listed", func() bool { return listTools(t, adminCS)["mcp_a_pid"] != nil })
	// An agent token on plain /mcp selects the agent's view.
	bot, err := connectWithToken(t, "http://"+s.addr+"/mcp", "bot-token-123456")
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(listTools(t, bot)); len(got) != 1 || got[0] != "mcp_a_echo" {
		t.Errorf("bot's token on /mcp sees %v, want only mcp_a_echo", got)
	}
	// Rate limit: burst 2, then a tool error with a retry hint, then recovery.
	var limited *mcp.CallToolResult
	for i := range 6 {
		res := mustCall(t, bot, "mcp_a_echo", map[string]any{"text": fmt.Sprint(i)})
		if res.IsError {
			limited = res
			break
		}
	}
	if limited == nil || !strings.Contains(textOf(limited), "rate limit exceeded; retry in") || limited.Meta["retryAfterMs"] == nil {
		t.Fatalf("no rate-limit tool error: %s", js(limited))
	}
	testutil.Eventually(t, 5*time.Second, "rate limit recovers", func() bool {
		return !mustCall(t, bot, "mcp_a_echo", map[string]any{"text": "again"}).IsError
	})
	if strings.Contains(s.Stderr(), "bot-token-123456") || strings.Contains(s.Stderr(), "admin-token-abcdef") {
		t.Error("a token reached the log")
	}
}

// TestAdminReload: POST /admin/reload needs the reload token.
func TestAdminReload(t *testing.T) {
	cfg := map[string]any{"mcpServers": map[string]any{"a": fixtureServer("a")}, "admin": map[string]any{"reloadToken": "reload-secret-42"}}
	s := startSwitchboard(t, cfg)
	post := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.admin+"/admin/reload", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("nope"); code != http.StatusUnauthorized {
		t.Errorf("wrong reload token: %d", code)
	}
	if code := post("reload-secret-42"); code != http.StatusAccepted {
		t.Errorf("reload: %d", code)
	}
	testutil.Eventually(t, 10*time.Second, "admin reload recorded", func() bool {
		lr := s.lastReload(t)
		return lr != nil && strings.Contains(fmt.Sprint(lr["reason"]), "admin")
	})
}

// TestReloadAppliesInPlace: a reload that changes toolTimeout and the
// breaker keeps the server's process and applies both at once; audit,
// telemetry and logLevel apply without a restart; a changed listen address
// is refused with a message naming it, and nothing of that edit applies.
func TestReloadAppliesInPlace(t *testing.T) {
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.log")
	cfg := map[string]any{"listen": "127.0.0.1:0", "logLevel": "info", "mcpServers": map[string]any{"a": fixtureServer("a")}}
	s := startSwitchboardIn(t, dir, dir, cfg, nil)
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "a listed", func() bool { return listTools(t, cs)["mcp_a_sleep"] != nil })
	pid := pidOf(t, cs, "mcp_a_pid")
	if res := mustCall(t, cs, "mcp_a_sleep", map[string]any{"ms": 600}); res.IsError {
		t.Fatalf("sleep under the default timeout: %s", js(res))
	}
	if got := sample(s.scrape(t), "switchboard_tool_calls_total", map[string]string{"tool": "mcp_a_sleep"}); got < 1 {
		t.Fatalf("before the reload /metrics counts %v sleep calls", got)
	}

	a := with(fixtureServer("a"), "toolTimeout", 300, "breaker", map[string]any{"failures": 2, "openMs": 60000})
	rewrite(t, s.config, map[string]any{
		"listen":     "127.0.0.1:0",
		"logLevel":   "debug",
		"audit":      map[string]any{"file": auditPath},
		"telemetry":  map[string]any{"prometheus": false},
		"mcpServers": map[string]any{"a": a},
	})
	s.waitGen(t, 2)
	if got := pidOf(t, cs, "mcp_a_pid"); got != pid {
		t.Errorf("toolTimeout and breaker change restarted the server: pid %d -> %d", pid, got)
	}
	// toolTimeout: a 600 ms call now times out; two timeouts open the
	// breaker (failures: 2), and the next call is refused at once.
	for i := range 2 {
		if res := mustCall(t, cs, "mcp_a_sleep", map[string]any{"ms": 600}); !res.IsError || !strings.Contains(textOf(res), "timed out") {
			t.Errorf("call %d under toolTimeout 300 ms: %s", i+1, js(res))
		}
	}
	if res := mustCall(t, cs, "mcp_a_echo", map[string]any{"text": "x"}); !res.IsError || !strings.Contains(textOf(res), "breaker") {
		t.Errorf("after two timeouts with breaker.failures 2: %s", js(res))
	}
	if got := pidOf2(t, s, "a"); got != pid {
		t.Errorf("server restarted: pid %d -> %d", pid, got)
	}
	// audit: the calls since the reload are in the new audit file.
	testutil.Eventually(t, 5*time.Second, "audit records", func() bool {
		b, _ := os.ReadFile(auditPath)
		return strings.Count(string(b), "mcp_a_sleep") >= 2
	})
	// telemetry: prometheus off empties /metrics.
	if got := sample(s.scrape(t), "switchboard_tool_calls_total", nil); got != -1 {
		t.Errorf("prometheus: false, yet /metrics still has tool calls (%v)", got)
	}
	// logLevel: debug lines appear (an unchanged reload logs one).
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "a debug line after the reload", func() bool {
		return strings.Contains(s.Stderr(), "reload skipped")
	})

	// listen: refused, with its name and both values; the rest of the
	// edit does not apply.
	rewrite(t, s.config, map[string]any{
		"listen":     "127.0.0.1:1",
		"logLevel":   "debug",
		"mcpServers": map[string]any{"a": fixtureServer("a"), "b": fixtureServer("b")},
	})
	testutil.Eventually(t, 10*time.Second, "listen change refused", func() bool {
		lr := s.lastReload(t)
		return lr != nil && lr["ok"] == false
	})
	if msg := fmt.Sprint(s.lastReload(t)["error"]); !strings.Contains(msg, "listen") || !strings.Contains(msg, "127.0.0.1:1") || !strings.Contains(msg, "restart") {
		t.Errorf("refusal does not name the setting and what to do: %s", msg)
	}
	if g := s.gen(t); g != 2 {
		t.Errorf("a refused reload changed the generation to %d", g)
	}
	if listTools(t, cs)["mcp_b_echo"] != nil {
		t.Error("server b of the refused edit was added")
	}
}

// pidOf2 is a server's PID from /status.
func pidOf2(t *testing.T, s *sb, name string) int {
	t.Helper()
	servers, _ := s.status(t)["servers"].([]any)
	for _, v := range servers {
		if m, _ := v.(map[string]any); m["name"] == name {
			pid, _ := m["pid"].(float64)
			return int(pid)
		}
	}
	t.Fatalf("no server %q in /status", name)
	return 0
}
