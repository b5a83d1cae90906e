package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// The authorization server of these tests is ./authserver (zitadel/oidc's
// op package; its own module, so its dependencies stay out of
// switchboard's go.mod), built once on first use.
var (
	authServerOnce sync.Once
	authServerBin  string
	authServerErr  error
)

// startAuthServer runs the authorization server with cfg (its JSON config)
// and extra flags, and returns its issuer URL.
func startAuthServer(t *testing.T, cfg any, args ...string) string {
	t.Helper()
	authServerOnce.Do(func() {
		authServerBin = filepath.Join(binDir, "authserver")
		cmd := exec.Command("go", "build", "-o", authServerBin, ".")
		cmd.Dir = "authserver"
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			authServerErr = fmt.Errorf("build authserver: %v\n%s", err, out)
		}
	})
	if authServerErr != nil {
		t.Fatal(authServerErr)
	}
	dir := t.TempDir()
	b, _ := json.Marshal(cfg)
	conf := filepath.Join(dir, "as.json")
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "issuer")
	p := start(t, dir, nil, authServerBin, append([]string{"--config", conf, "--ready-file", ready, "--listen", "127.0.0.1:0"}, args...)...)
	return strings.TrimSpace(waitFile(t, ready, 30*time.Second, p))
}

// clientToken gets an access token by the client-credentials grant.
func clientToken(t *testing.T, issuer, id, secret, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	req, _ := http.NewRequest(http.MethodPost, issuer+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &tr); err != nil || tr.AccessToken == "" {
		t.Fatalf("token for %s: %d %s", id, resp.StatusCode, b)
	}
	return tr.AccessToken
}

// pingPath sends a ping to path with token and returns the status and
// WWW-Authenticate.
func pingPath(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestOAuthProtectedResource: switchboard accepts the access tokens of a
// real authorization server beside its static tokens. JWTs are checked
// against the issuer's keys (issuer, audience, expiry, signature, scope),
// opaque tokens by introspection (a revoked one is refused), the
// protected-resource metadata names the server, a claim selects the agent
// view, and each person (issuer and subject, whatever token they show)
// has their own sessions and rate-limit budget.
func TestOAuthProtectedResource(t *testing.T) {
	const resource = "http://switchboard.test"
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	aud := []string{resource + "/mcp"}
	client := func(id, subject string, extra map[string]any) map[string]any {
		c := map[string]any{"id": id, "secret": id + "-secret", "subject": subject, "audience": aud, "grants": []string{"client_credentials"}}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	asCfg := map[string]any{"clients": []any{
		client("alice-app", "alice", nil),
		client("alice-cli", "alice", nil), // another client of the same person
		client("bob-app", "bob", nil),
		// A token for switchboard as a whole (aud: the base URL) is good
		// at every endpoint; one for /mcp only there.
		client("carol-app", "carol", map[string]any{"claims": map[string]any{"team": "red"}, "audience": []string{resource}}),
		client("bob-any", "bob", map[string]any{"audience": []string{resource}}),
		client("other-aud", "alice", map[string]any{"audience": []string{"http://elsewhere.test/mcp"}}),
		client("expired", "alice", map[string]any{"ttlSeconds": -300}),
		client("opaque-app", "dave", map[string]any{"tokenType": "opaque", "audience": []string{resource + "/mcp", "switchboard"}}),
		map[string]any{"id": "switchboard", "secret": "introspect-secret", "grants": []string{"client_credentials"}},
	}}
	issuer := startAuthServer(t, asCfg, "--key", keyFile)
	// The same key, another issuer: a token it signs has a good signature
	// and the wrong iss.
	rogue := startAuthServer(t, asCfg, "--key", keyFile)

	const static = "static-token-5f0c2a9d7e41b386"
	cfg := map[string]any{
		"mcpServers": map[string]any{"f": fixtureServer("f")},
		"limits":     map[string]any{"callsPerMinute": 3},
		"agents": map[string]any{"list": []any{
			map[string]any{"id": "alpha", "tools": map[string]any{"allow": []string{"mcp_f_add"}}},
		}},
		"auth": map[string]any{
			"tokens": []string{"secret://env/SB_STATIC"},
			"oauth": map[string]any{
				"resource": resource, "issuer": issuer, "scopes": []string{"mcp:tools"},
				"introspection": map[string]any{"url": issuer + "/oauth/introspect", "clientId": "switchboard",
					"clientSecret": "secret://env/SB_INTROSPECT", "cacheSeconds": 1},
				"agentClaim": "team", "agents": map[string]any{"red": "alpha"},
			},
		},
	}
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, cfg, []string{"SB_STATIC=" + static, "SB_INTROSPECT=introspect-secret"})
	mcpURL := "http://" + s.addr + "/mcp"

	t.Run("metadata", func(t *testing.T) {
		for path, want := range map[string]string{"/mcp": resource + "/mcp", "/agents/alpha/mcp": resource + "/agents/alpha/mcp", "": resource} {
			resp, err := http.Get("http://" + s.addr + "/.well-known/oauth-protected-resource" + path)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				ScopesSupported      []string `json:"scopes_supported"`
			}
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || m.Resource != want ||
				len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != issuer || strings.Join(m.ScopesSupported, " ") != "mcp:tools" {
				t.Errorf("metadata of %q: %d %+v %v", path, resp.StatusCode, m, err)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		good := clientToken(t, issuer, "alice-app", "alice-app-secret", "mcp:tools")
		parts := strings.Split(good, ".")
		sig := []byte(parts[2])
		sig[len(sig)/2] ^= 0x01 // still base64url
		tampered := parts[0] + "." + parts[1] + "." + string(sig)
		meta := `resource_metadata="` + resource + `/.well-known/oauth-protected-resource/mcp"`
		for _, c := range []struct {
			what, token string
			code        int
			want        []string
		}{
			{"no token", "", 401, []string{meta}},
			{"wrong audience", clientToken(t, issuer, "other-aud", "other-aud-secret", "mcp:tools"), 401, []string{meta, `error="invalid_token"`}},
			{"wrong issuer", clientToken(t, rogue, "alice-app", "alice-app-secret", "mcp:tools"), 401, []string{meta, `error="invalid_token"`}},
			{"expired", clientToken(t, issuer, "expired", "expired-secret", "mcp:tools"), 401, []string{meta, `error="invalid_token"`}},
			{"bad signature", tampered, 401, []string{meta, `error="invalid_token"`}},
			{"missing scope", clientToken(t, issuer, "alice-app", "alice-app-secret", "other"), 403, []string{meta, `error="insufficient_scope"`, `scope="mcp:tools"`}},
		} {
			code, www := pingPath(t, s.addr, "/mcp", c.token)
			if code != c.code || !strings.HasPrefix(www, "Bearer ") {
				t.Errorf("%s: %d %q, want %d", c.what, code, www, c.code)
			}
			for _, w := range c.want {
				if !strings.Contains(www, w) {
					t.Errorf("%s: WWW-Authenticate %q lacks %s", c.what, www, w)
				}
			}
			if c.token == "" && strings.Contains(www, "error=") {
				t.Errorf("no token: WWW-Authenticate %q names an error (RFC 6750 §3.1)", www)
			}
		}
	})

	t.Run("views", func(t *testing.T) {
		carol := clientToken(t, issuer, "carol-app", "carol-app-secret", "mcp:tools")
		cs, err := connectWithToken(t, mcpURL, carol)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 20*time.Second, "alpha lists add", func() bool { return listTools(t, cs)["mcp_f_add"] != nil })
		if got := keys(listTools(t, cs)); len(got) != 1 {
			t.Errorf("carol's team claim on /mcp: sees %v, want alpha's view (mcp_f_add only)", got)
		}
		if code, _ := pingPath(t, s.addr, "/agents/alpha/mcp", carol); code != http.StatusOK {
			t.Errorf("carol on alpha's path: %d", code)
		}
		bob := clientToken(t, issuer, "bob-any", "bob-any-secret", "mcp:tools")
		if code, _ := pingPath(t, s.addr, "/agents/alpha/mcp", bob); code != http.StatusForbidden {
			t.Errorf("bob (no team claim) on alpha's path: %d, want 403", code)
		}
		alice := clientToken(t, issuer, "alice-app", "alice-app-secret", "mcp:tools")
		if code, www := pingPath(t, s.addr, "/agents/alpha/mcp", alice); code != http.StatusUnauthorized ||
			!strings.Contains(www, `resource_metadata="`+resource+`/.well-known/oauth-protected-resource/agents/alpha/mcp"`) {
			t.Errorf("a token for /mcp on alpha's path: %d %q, want 401 naming alpha's metadata", code, www)
		}
	})

	t.Run("opaque", func(t *testing.T) {
		tok := clientToken(t, issuer, "opaque-app", "opaque-app-secret", "mcp:tools")
		if strings.Count(tok, ".") == 2 {
			t.Fatalf("opaque-app got a JWT")
		}
		cs, err := connectWithToken(t, mcpURL, tok)
		if err != nil {
			t.Fatal(err)
		}
		if res := mustCall(t, cs, "mcp_f_add", map[string]any{"a": 1, "b": 2}); res.IsError {
			t.Fatalf("call with an introspected token: %s", js(res))
		}
		form := url.Values{"token": {tok}}
		req, _ := http.NewRequest(http.MethodPost, issuer+"/revoke", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("opaque-app", "opaque-app-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %d", resp.StatusCode)
		}
		// Answers are reused for cacheSeconds (1), then asked again.
		testutil.Eventually(t, 10*time.Second, "the revoked token is refused", func() bool {
			code, www := pingPath(t, s.addr, "/mcp", tok)
			return code == http.StatusUnauthorized && strings.Contains(www, `error="invalid_token"`)
		})
	})

	t.Run("people", func(t *testing.T) {
		alice := clientToken(t, issuer, "alice-app", "alice-app-secret", "mcp:tools")
		bob := clientToken(t, issuer, "bob-app", "bob-app-secret", "mcp:tools")
		a, err := connectWithToken(t, mcpURL, alice)
		if err != nil {
			t.Fatal(err)
		}
		// Bob cannot use Alice's session; another token of Alice's can.
		if code := pingAs(t, s.addr, bob, a.ID()); code != http.StatusNotFound {
			t.Errorf("bob on alice's session: %d, want 404", code)
		}
		if code := pingAs(t, s.addr, clientToken(t, issuer, "alice-cli", "alice-cli-secret", "mcp:tools"), a.ID()); code != http.StatusOK {
			t.Errorf("alice, with another client's token, on her session: %d, want 200", code)
		}
		// The budget (3 calls a minute) is Alice's, whichever token she
		// shows; Bob and the static token have their own.
		for i := range 3 {
			if res := mustCall(t, a, "mcp_f_add", map[string]any{"a": 1, "b": i}); res.IsError {
				t.Fatalf("alice's call %d: %s", i+1, js(res))
			}
		}
		a2, err := connectWithToken(t, mcpURL, clientToken(t, issuer, "alice-cli", "alice-cli-secret", "mcp:tools"))
		if err != nil {
			t.Fatal(err)
		}
		if res := mustCall(t, a2, "mcp_f_add", map[string]any{"a": 1, "b": 1}); !res.IsError || !strings.Contains(textOf(res), "rate limit exceeded") {
			t.Errorf("alice's fourth call, with another token: %s, want the rate-limit error", js(res))
		}
		for who, tok := range map[string]string{"bob": bob, "the static token": static} {
			cs, err := connectWithToken(t, mcpURL, tok)
			if err != nil {
				t.Fatalf("%s: %v", who, err)
			}
			if res := mustCall(t, cs, "mcp_f_add", map[string]any{"a": 2, "b": 2}); res.IsError {
				t.Errorf("%s, while alice is limited: %s", who, js(res))
			}
		}
	})

	t.Run("reload", func(t *testing.T) {
		// A reload builds the check anew from the new config: a scope
		// the tokens lack is now required; static tokens are unaffected.
		oauth := cfg["auth"].(map[string]any)["oauth"].(map[string]any)
		oauth["scopes"] = []string{"mcp:admin"}
		g := s.gen(t)
		rewrite(t, s.config, cfg)
		s.waitGen(t, g+1)
		tok := clientToken(t, issuer, "bob-app", "bob-app-secret", "mcp:tools")
		if code, www := pingPath(t, s.addr, "/mcp", tok); code != http.StatusForbidden || !strings.Contains(www, `scope="mcp:admin"`) {
			t.Errorf("after the reload, a token without mcp:admin: %d %q, want 403 naming mcp:admin", code, www)
		}
		if code, _ := pingPath(t, s.addr, "/mcp", static); code != http.StatusOK {
			t.Errorf("the static token after the reload: %d", code)
		}
	})

	for _, secret := range []string{"introspect-secret", static} {
		if strings.Contains(s.Stderr(), secret) {
			t.Errorf("a credential reached the log")
		}
	}
}
