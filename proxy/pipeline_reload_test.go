package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeConfig replaces the config file in one rename, as editors and
// ConfigMaps do, so the watcher never reads half a file.
func writeConfig(t testing.TB, path, config string) {
	t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(path), "tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.WriteString(config); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatal(err)
	}
}

// status reads GET /status from the admin listener.
func status(t testing.TB, admin string) StatusReport {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st StatusReport
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

// waitStatus polls /status until done holds for it.
func waitStatus(t testing.TB, admin string, what string, done func(StatusReport) bool) StatusReport {
	t.Helper()
	var st StatusReport
	testutil.Eventually(t, 10*time.Second, what, func() bool {
		st = status(t, admin)
		return done(st)
	})
	return st
}

// postReload asks for a reload through POST /admin/reload.
func postReload(t testing.TB, admin, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+admin+"/admin/reload", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestPipelineReloadInPlace pins a reload in process: a new toolTimeout
// applies to the running upstream (same pid, next generation, and a slow
// call now times out), and a config that changes listen is refused by name
// while the old one keeps serving.
func TestPipelineReloadInPlace(t *testing.T) {
	const reloadToken = "reload-token-5f0e2b7c"
	config := func(toolTimeoutMS int, listen string) string {
		return pipelineConfig(map[string]any{"toolTimeout": toolTimeoutMS}, nil, map[string]any{
			"listen": listen, "adminListen": "127.0.0.1:0",
			"admin": map[string]any{"reloadToken": reloadToken},
		})
	}
	tp := startProxy(t, config(5000, "127.0.0.1:0"), "http")
	cs := tp.connect(t, nil, nil)
	waitTool(t, cs, "mcp_echo_sleep")
	before := waitStatus(t, tp.admin, "ready server with a pid", func(st StatusReport) bool {
		return len(st.Servers) == 1 && st.Servers[0].PID != 0
	})

	res, err := call(cs, "mcp_echo_sleep", map[string]any{"ms": 300})
	if err != nil || res.IsError {
		t.Fatalf("slow call under toolTimeout 5000: %+v, %v", res, err)
	}

	writeConfig(t, tp.path, config(100, "127.0.0.1:0"))
	if code := postReload(t, tp.admin, "wrong"); code != http.StatusUnauthorized {
		t.Errorf("reload with a wrong token: %d, want 401", code)
	}
	if code := postReload(t, tp.admin, reloadToken); code != http.StatusAccepted {
		t.Errorf("reload: %d, want 202", code)
	}
	after := waitStatus(t, tp.admin, "applied reload", func(st StatusReport) bool {
		return st.Gen > before.Gen && st.LastReload != nil && st.LastReload.OK
	})
	if len(after.Servers) != 1 || after.Servers[0].PID != before.Servers[0].PID {
		t.Errorf("the upstream was restarted for a new toolTimeout: pid %d, then %+v", before.Servers[0].PID, after.Servers)
	}
	res, err = call(cs, "mcp_echo_sleep", map[string]any{"ms": 2000})
	if err != nil {
		t.Fatal(err)
	}
	if text := resultText(t, res); !res.IsError || !strings.Contains(text, "timed out after 100ms") {
		t.Errorf("slow call under toolTimeout 100: isError %v, %q; want a timeout", res.IsError, text)
	}

	// Listen addresses cannot change on reload.
	writeConfig(t, tp.path, config(100, "127.0.0.1:1"))
	if code := postReload(t, tp.admin, reloadToken); code != http.StatusAccepted {
		t.Errorf("reload: %d, want 202", code)
	}
	refused := waitStatus(t, tp.admin, "refused reload", func(st StatusReport) bool {
		return st.LastReload != nil && !st.LastReload.OK
	})
	if !strings.Contains(refused.LastReload.Error, "listen") {
		t.Errorf("refusal %q does not name listen", refused.LastReload.Error)
	}
	if refused.Gen != after.Gen || refused.Servers[0].PID != before.Servers[0].PID {
		t.Errorf("a refused reload changed gen %d → %d or pid %d → %d", after.Gen, refused.Gen, before.Servers[0].PID, refused.Servers[0].PID)
	}
	if res, err := call(cs, "mcp_echo_echo", map[string]any{"text": "still here"}); err != nil || res.IsError {
		t.Errorf("after a refused reload: %+v, %v", res, err)
	}
}

// rawPost posts one JSON-RPC message to /mcp with the given token (none if
// empty) and session, and returns the response, its body read.
func rawPost(t testing.TB, addr, token, sessionID, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestPipelineAuth pins downstream bearer tokens on /mcp: no token and a
// wrong token get 401 with WWW-Authenticate, and a session opened with one
// token cannot be used (POST), listened to (GET) or ended (DELETE) with
// another (404, as an unknown session), though both are valid.
func TestPipelineAuth(t *testing.T) {
	const tokenA, tokenB = "token-a-8c1d52e0", "token-b-0a9f37d4"
	t.Setenv("SWITCHBOARD_TEST_TOKEN_B", tokenB)
	tp := startProxy(t, pipelineConfig(nil, nil, map[string]any{
		"auth": map[string]any{"tokens": []string{tokenA, "secret://env/SWITCHBOARD_TEST_TOKEN_B"}},
	}), "http")
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

	for _, c := range []struct{ name, token string }{{"no token", ""}, {"wrong token", "token-c-ffffffff"}} {
		resp, _ := rawPost(t, tp.addr, c.token, "", initialize)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 with a Bearer challenge", c.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	resp, body := rawPost(t, tp.addr, tokenA, "", initialize)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize with token A: %d, session %q, %s", resp.StatusCode, id, body)
	}
	if resp, body := rawPost(t, tp.addr, tokenA, id, initialized); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized with token A: %d %s", resp.StatusCode, body)
	}
	if resp, body := rawPost(t, tp.addr, tokenB, id, list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("token A's session with token B: %d %s, want 404", resp.StatusCode, body)
	}
	if resp, body := rawPost(t, tp.addr, "", id, list); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("token A's session with no token: %d %s, want 401", resp.StatusCode, body)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, err := http.NewRequest(method, "http://"+tp.addr+"/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokenB)
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s of token A's session with token B: %d, want 404", method, resp.StatusCode)
		}
	}
	// Still token A's, and still open.
	if resp, body := rawPost(t, tp.addr, tokenA, id, list); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Errorf("token A's session with token A: %d %s, want 200 and a tool list", resp.StatusCode, body)
	}

	// A go-sdk client with token B (resolved from a secret reference)
	// works end to end.
	cs := tp.connect(t, nil, http.Header{"Authorization": {"Bearer " + tokenB}})
	waitTool(t, cs, "mcp_echo_echo")
	if res, err := call(cs, "mcp_echo_echo", map[string]any{"text": "authorised"}); err != nil || res.IsError {
		t.Errorf("call with token B: %+v, %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bare := &mcp.StreamableClientTransport{Endpoint: "http://" + tp.addr + "/mcp", MaxRetries: -1}
	if cs, err := mcp.NewClient(&mcp.Implementation{Name: "anonymous", Version: "1"}, nil).Connect(ctx, bare, nil); err == nil {
		cs.Close()
		t.Error("a client without a token connected")
	}
}

// TestPipelineSessionLimits pins maxSessions (one token, one endpoint:
// the session over the limit gets 429 with the reason, another token is
// not affected) and sessionIdleTimeout (an abandoned session ends and its
// slot is free again); a reload changes both.
func TestPipelineSessionLimits(t *testing.T) {
	const tokenA, tokenB = "token-a-1b7e4c90", "token-b-52d0a6f3"
	const reloadToken = "reload-token-9d3a"
	config := func(maxSessions, idleMS int) string {
		return pipelineConfig(nil, nil, map[string]any{
			"auth":  map[string]any{"tokens": []string{tokenA, tokenB}},
			"admin": map[string]any{"reloadToken": reloadToken}, "adminListen": "127.0.0.1:0", "listen": "127.0.0.1:0",
			"maxSessions": maxSessions, "sessionIdleTimeout": idleMS,
		})
	}
	tp := startProxy(t, config(2, 0), "http")
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	open := func(token string) (int, string, string) {
		resp, body := rawPost(t, tp.addr, token, "", initialize)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body
	}
	for i := range 2 {
		if code, id, body := open(tokenA); code != http.StatusOK || id == "" {
			t.Fatalf("session %d of token A: %d %s", i+1, code, body)
		}
	}
	code, _, body := open(tokenA)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "maxSessions") {
		t.Errorf("third session of token A: %d %q, want 429 naming maxSessions", code, body)
	}
	if code, _, body := open(tokenB); code != http.StatusOK {
		t.Errorf("first session of token B: %d %s", code, body)
	}

	// With an idle timeout the abandoned sessions end and free their slots.
	before := status(t, tp.admin)
	writeConfig(t, tp.path, config(2, 200))
	if code := postReload(t, tp.admin, reloadToken); code != http.StatusAccepted {
		t.Fatalf("reload: %d", code)
	}
	waitStatus(t, tp.admin, "applied reload", func(st StatusReport) bool { return st.Gen > before.Gen })
	waitStatus(t, tp.admin, "every abandoned session ended", func(st StatusReport) bool { return st.Views["default"].Sessions == 0 })
	if code, _, body := open(tokenA); code != http.StatusOK {
		t.Errorf("token A after its sessions expired: %d %s", code, body)
	}
}
