package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// vaultTokenPolicy is the policy docs/auth.md gives for tokenStore
// "vault:secret/switchboard/tokens" with its key in Vault: the test's
// switchboards run with a token that has only it (and Vault's default).
const vaultTokenPolicy = `
path "secret/data/switchboard/tokens/*"     { capabilities = ["create", "read", "update"] }
path "secret/metadata/switchboard/tokens/*" { capabilities = ["list", "delete"] }
path "secret/data/switchboard/key"          { capabilities = ["read"] }
`

// TestOAuthVaultStoreReplicas: two switchboard replicas share their
// upstream OAuth tokens through tokenStore "vault:secret/switchboard/tokens"
// (issue 35), running with a Vault token limited to the documented
// policy. A person's consent given once with `auth login` (authorization
// code, its entry sealed with a tokenStoreKey read from Vault) and the
// client-credentials token one replica obtained (stored as plain KV
// data) are used by the other replica, and after a restart of both,
// without a new token request at the authorization server. The KV data
// read back is the documented shape: the sealed entry holds no token in
// plaintext. `auth status` sees the tokens, `auth logout` removes them
// from Vault, and a replica started after it needs a new consent; no
// token file is written and no token is logged.
func TestOAuthVaultStoreReplicas(t *testing.T) {
	vault := startDevVault(t)
	bRes := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	issuer := startAuthServer(t, map[string]any{
		"clients": []any{
			map[string]any{"id": "sb-code", "secret": "sb-code-v4u1t", "redirectURIs": []string{redirect},
				"grants": []string{"authorization_code", "refresh_token"}},
			map[string]any{"id": "sb-cc", "secret": "sb-cc-v4u1t", "grants": []string{"client_credentials"}, "audience": []string{bRes + "/mcp"}},
			map[string]any{"id": "b-introspect", "secret": "b-introspect-v4u1t", "grants": []string{"client_credentials"}},
		},
		"users": []any{map[string]any{"id": "alice"}},
	})
	// B: the protected MCP server both replicas call.
	bDir := t.TempDir()
	startSwitchboardIn(t, bDir, bDir, map[string]any{
		"listen":     strings.TrimPrefix(bRes, "http://"),
		"mcpServers": map[string]any{"f": fixtureServer("f")},
		"auth": map[string]any{"oauth": map[string]any{
			"resource": bRes, "issuer": issuer, "scopes": []string{"mcp:tools"},
			"audience": []string{bRes + "/mcp", "sb-code"},
			"introspection": map[string]any{"url": issuer + "/oauth/introspect", "clientId": "b-introspect",
				"clientSecret": "secret://env/B_INTROSPECT", "cacheSeconds": 0},
		}},
	}, []string{"B_INTROSPECT=b-introspect-v4u1t"})

	// The sealing key in Vault; a token with the documented policy only.
	vault.put(t, "switchboard/key", map[string]string{"key": "token-store-key-5e1d0c"})
	if code, body := vault.do(t, "PUT", "sys/policies/acl/switchboard-tokens", map[string]any{"policy": vaultTokenPolicy}); code/100 != 2 {
		t.Fatalf("write policy: %d %v", code, body)
	}
	code, body := vault.do(t, "POST", "auth/token/create", map[string]any{"policies": []string{"switchboard-tokens"}, "ttl": "1h"})
	auth, _ := body["auth"].(map[string]any)
	limited, _ := auth["client_token"].(string)
	if code != 200 || limited == "" {
		t.Fatalf("create token: %d %v", code, body)
	}

	tokenDir := t.TempDir() // the file store's: must stay empty
	env := []string{"VAULT_ADDR=http://" + vault.addr, "VAULT_TOKEN=" + limited, "SWITCHBOARD_TOKEN_DIR=" + tokenDir,
		"SB_CODE=sb-code-v4u1t", "SB_CC=sb-cc-v4u1t"}
	const store = "vault:secret/switchboard/tokens"
	cfg := map[string]any{"mcpServers": map[string]any{
		"up": map[string]any{"url": bRes + "/mcp", "type": "http", "oauth": map[string]any{
			"grant": "authorization_code", "clientId": "sb-code", "clientSecret": "secret://env/SB_CODE", "redirectUri": redirect,
			"tokenStore": store, "tokenStoreKey": "secret://vault/secret/switchboard/key#key"}},
		"cc": map[string]any{"url": bRes + "/mcp", "type": "http", "oauth": map[string]any{
			"grant": "client_credentials", "clientId": "sb-cc", "clientSecret": "secret://env/SB_CC", "tokenStore": store}},
	}}
	replica := func(t *testing.T) *sb {
		t.Helper()
		run := t.TempDir()
		return startSwitchboardIn(t, run, run, cfg, env)
	}
	call := func(t *testing.T, s *sb, server string) (*mcp.CallToolResult, error) {
		t.Helper()
		cs := s.client(t, nil)
		defer cs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_" + server + "_mcp_f_add", Arguments: map[string]any{"a": 2, "b": 3}})
	}
	works := func(t *testing.T, s *sb, server string) {
		t.Helper()
		var last string
		testutil.Eventually(t, 30*time.Second, "a call through "+server, func() bool {
			res, err := call(t, s, server)
			msg := ""
			if err != nil {
				msg = err.Error()
			} else if msg = textOf(res); !res.IsError && strings.Contains(msg, "\n5\n") {
				return true
			}
			if msg != last {
				t.Logf("call %s: %s", server, msg)
				last = msg
			}
			return false
		})
	}
	grants := func(t *testing.T, when string, want map[string]int) {
		t.Helper()
		got := grantCounts(t, issuer)
		for g, n := range want {
			if got[g] != n {
				t.Errorf("%s: %d %s token requests, want %d (all: %v)", when, got[g], g, n, got)
			}
		}
	}
	once := map[string]int{"authorization_code": 1, "client_credentials": 1, "refresh_token": 0}

	// Replica 1 runs before any consent; the person consents once.
	a1 := replica(t)
	testutil.Eventually(t, 30*time.Second, "/status to name auth login", func() bool {
		b, _ := json.Marshal(a1.status(t))
		return strings.Contains(string(b), "switchboard auth login up")
	})
	authLogin(t, a1.config, env)
	works(t, a1, "up")
	works(t, a1, "cc")
	grants(t, "replica 1", once)

	// Replica 2 uses both tokens from Vault: no token request.
	a2 := replica(t)
	works(t, a2, "up")
	works(t, a2, "cc")
	grants(t, "replica 2", once)

	// What Vault holds, read with the root token.
	refresh := lastRefreshToken(t, issuer, "sb-code")
	code, body = vault.do(t, "GET", "secret/data/switchboard/tokens/up", nil)
	if code != 200 {
		t.Fatalf("read up's entry: %d %v", code, body)
	}
	upData := body["data"].(map[string]any)["data"].(map[string]any)
	raw, _ := json.Marshal(upData)
	if upData["server"] != "up" || upData["principal"] != "" || upData["sealed"] == nil || upData["entry"] != nil {
		t.Errorf("up's entry (tokenStoreKey set) is not {server, principal, sealed}: %s", raw)
	}
	for _, v := range []string{refresh, "access_token", "refresh_token", "sb-code-v4u1t"} {
		if strings.Contains(string(raw), v) {
			t.Errorf("up's sealed entry holds %q in plaintext: %s", v, raw)
		}
	}
	code, body = vault.do(t, "GET", "secret/data/switchboard/tokens/cc", nil)
	if code != 200 {
		t.Fatalf("read cc's entry: %d %v", code, body)
	}
	ccData := body["data"].(map[string]any)["data"].(map[string]any)
	entry, _ := ccData["entry"].(map[string]any)
	tok, _ := entry["token"].(map[string]any)
	ccAccess, _ := tok["access_token"].(string)
	if ccData["server"] != "cc" || ccData["sealed"] != nil || entry["grant"] != "client_credentials" || ccAccess == "" {
		t.Errorf("cc's entry (no tokenStoreKey) is not {server, principal, entry: {token: {access_token…}, grant…}}: %v", ccData)
	}

	// Both replicas restart: the consent and the token are kept.
	a1.proc.stop(5 * time.Second)
	a2.proc.stop(5 * time.Second)
	a3 := replica(t)
	works(t, a3, "up")
	works(t, a3, "cc")
	grants(t, "after a restart", once)

	// auth status reads the tokens from Vault.
	out := runAuth(t, env, "status", "--config", a3.config)
	for _, re := range []string{"cc  +client_credentials  +yes", "up  +authorization_code  +yes \\(refreshable\\)"} {
		if !regexp.MustCompile("(?m)^" + re).MatchString(out) {
			t.Errorf("auth status lacks a line like %q:\n%s", re, out)
		}
	}
	// auth logout removes them from Vault, every version.
	runAuth(t, env, "logout", "up", "--config", a3.config)
	runAuth(t, env, "logout", "cc", "--config", a3.config)
	for _, p := range []string{"secret/data/switchboard/tokens/up", "secret/metadata/switchboard/tokens/up", "secret/metadata/switchboard/tokens/cc"} {
		if code, body := vault.do(t, "GET", p, nil); code != 404 {
			t.Errorf("after logout, %s: %d %v", p, code, body)
		}
	}
	if code, body := vault.do(t, "LIST", "secret/metadata/switchboard/tokens", nil); code != 404 {
		t.Errorf("after logout, the prefix lists: %d %v", code, body)
	}
	// A replica started now has no consent, and says how to give it.
	a3.proc.stop(5 * time.Second)
	a4 := replica(t)
	testutil.Eventually(t, 30*time.Second, "/status after logout to name auth login", func() bool {
		b, _ := json.Marshal(a4.status(t))
		return strings.Contains(string(b), "switchboard auth login up")
	})

	if files, _ := os.ReadDir(tokenDir); len(files) > 0 {
		t.Errorf("the file store's directory holds %v: tokens went to a file", files)
	}
	for i, s := range []*sb{a1, a2, a3, a4} {
		for _, v := range []string{refresh, ccAccess, limited} {
			if strings.Contains(s.Stderr(), v) {
				t.Errorf("replica %d logged a token", i+1)
			}
		}
	}
}

// runAuth runs `switchboard auth ARGS…` with env and returns its stdout.
func runAuth(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, switchboard, append([]string{"auth"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("auth %v: %v\n%s%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// do sends one request to the Vault API with the root token and returns
// the status and the decoded body.
func (v *devVault) do(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+v.addr+"/v1/"+path, r)
	req.Header.Set("X-Vault-Token", v.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
