package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
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
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestOAuthUpstreamRealAS: switchboard (A) as the OAuth client of a
// remote server that is itself switchboard (B) as a protected resource of
// the real authorization server (e2e/authserver): a call through A
// reaches B's fixture with each grant: client credentials with a secret
// and with private_key_jwt, jwt_bearer with an assertion file read afresh
// (a rotated one is taken, an expired one refused), and authorization
// code through `auth login`, whose consent outlives a restart of A and
// whose revoked refresh token makes the next call fail with an error that
// names `switchboard auth login` until a new login.
//
// Audiences: client-credentials tokens carry B's resource URL (the
// authserver's client config); authorization-code tokens carry the client
// id, and jwt_bearer's opaque tokens the assertion's audience, so B
// accepts those ids too (its `audience`).
func TestOAuthUpstreamRealAS(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))

	bRes := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	ccAud := []string{bRes + "/mcp"}
	// ttlSeconds 20: under switchboard's 30 s early expiry, so every
	// request to B takes a new token (or refresh) while each stays valid
	// at B.
	issuer := startAuthServer(t, map[string]any{
		"clients": []any{
			map[string]any{"id": "sb-secret", "secret": "sb-secret-0c7e91", "grants": []string{"client_credentials"}, "audience": ccAud},
			map[string]any{"id": "sb-key", "publicKey": pubPEM, "grants": []string{"client_credentials"}, "audience": ccAud},
			map[string]any{"id": "sb-workload", "publicKey": pubPEM, "grants": []string{"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "ttlSeconds": 20},
			map[string]any{"id": "sb-code", "secret": "sb-code-5a1f3b", "redirectURIs": []string{redirect},
				"grants": []string{"authorization_code", "refresh_token"}, "ttlSeconds": 20},
			map[string]any{"id": "b-introspect", "secret": "b-introspect-93d2", "grants": []string{"client_credentials"}},
		},
		"users": []any{map[string]any{"id": "alice"}},
	})

	// B: the protected MCP server, JWTs checked locally, jwt_bearer's
	// opaque tokens by introspection.
	bDir := t.TempDir()
	startSwitchboardIn(t, bDir, bDir, map[string]any{
		"listen":     strings.TrimPrefix(bRes, "http://"),
		"mcpServers": map[string]any{"f": fixtureServer("f")},
		"auth": map[string]any{"oauth": map[string]any{
			"resource": bRes, "issuer": issuer, "scopes": []string{"mcp:tools"},
			"audience": []string{bRes + "/mcp", "sb-code", "b-introspect"},
			"introspection": map[string]any{"url": issuer + "/oauth/introspect", "clientId": "b-introspect",
				"clientSecret": "secret://env/B_INTROSPECT", "cacheSeconds": 0},
		}},
	}, []string{"B_INTROSPECT=b-introspect-93d2"})

	// startA runs switchboard A with B as the remote server "up".
	startA := func(t *testing.T, dir string, o map[string]any, env []string) (*sb, string) {
		t.Helper()
		cfg := map[string]any{"mcpServers": map[string]any{"up": map[string]any{"url": bRes + "/mcp", "type": "http", "oauth": o}}}
		run := t.TempDir()
		s := startSwitchboardIn(t, run, run, cfg, append([]string{"SWITCHBOARD_TOKEN_DIR=" + filepath.Join(dir, "tokens")}, env...))
		return s, s.config
	}
	// call adds through A → B → fixture and returns the result.
	call := func(t *testing.T, s *sb) (*mcp.CallToolResult, error) {
		t.Helper()
		cs := s.client(t, nil)
		defer cs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_up_mcp_f_add", Arguments: map[string]any{"a": 2, "b": 3}})
	}
	works := func(t *testing.T, s *sb) {
		t.Helper()
		var last string
		testutil.Eventually(t, 30*time.Second, "a call through A and B", func() bool {
			res, err := call(t, s)
			msg := ""
			if err != nil {
				msg = err.Error()
			} else {
				msg = textOf(res)
				if !res.IsError && strings.Contains(msg, "\n5\n") { // 2+3, inside the untrusted-content markers
					return true
				}
			}
			if msg != last {
				t.Logf("call: %s", msg)
				last = msg
			}
			return false
		})
	}

	t.Run("client_credentials_secret", func(t *testing.T) {
		s, _ := startA(t, t.TempDir(), map[string]any{"grant": "client_credentials", "clientId": "sb-secret",
			"clientSecret": "secret://env/SB_SECRET"}, []string{"SB_SECRET=sb-secret-0c7e91"})
		works(t, s)
	})

	t.Run("client_credentials_private_key_jwt", func(t *testing.T) {
		dir := t.TempDir()
		pk := filepath.Join(dir, "client.pem")
		if err := os.WriteFile(pk, []byte(keyPEM), 0o600); err != nil {
			t.Fatal(err)
		}
		s, _ := startA(t, dir, map[string]any{"grant": "client_credentials", "clientId": "sb-key",
			"privateKey": "secret://file" + pk}, nil)
		works(t, s)
	})

	t.Run("jwt_bearer", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "token")
		assertion := func(exp time.Duration) {
			t.Helper()
			jti := make([]byte, 8)
			rand.Read(jti)
			now := time.Now()
			signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
				Issuer: "sb-workload", Subject: "sb-workload", Audience: jwt.ClaimStrings{issuer, "b-introspect"},
				IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(exp)),
				ID: hex.EncodeToString(jti),
			}).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			tmp := file + ".new"
			if err := os.WriteFile(tmp, []byte(signed+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, file); err != nil { // as the kubelet swaps it
				t.Fatal(err)
			}
		}
		assertion(10 * time.Minute)
		s, _ := startA(t, dir, map[string]any{"grant": "jwt_bearer", "clientId": "sb-workload",
			"assertion": "secret://file" + file, "tokenStore": "memory"}, nil)
		works(t, s)
		// An expired assertion in the file: the next token request is
		// refused, so the file was read again.
		assertion(-time.Minute)
		res, err := call(t, s)
		if err == nil && !res.IsError {
			t.Fatalf("a call with an expired assertion in the file succeeded: %q", textOf(res))
		}
		// The rotated, valid one works.
		assertion(10 * time.Minute)
		works(t, s)
	})

	t.Run("authorization_code", func(t *testing.T) {
		dir := t.TempDir()
		o := map[string]any{"grant": "authorization_code", "clientId": "sb-code", "clientSecret": "secret://env/SB_CODE",
			"redirectUri": redirect}
		env := []string{"SB_CODE=sb-code-5a1f3b"}
		s, config := startA(t, dir, o, env)
		tokenEnv := append([]string{"SWITCHBOARD_TOKEN_DIR=" + filepath.Join(dir, "tokens")}, env...)

		// No consent yet: the server is down, and /status says how to
		// give it.
		testutil.Eventually(t, 30*time.Second, "/status to name auth login", func() bool {
			b, _ := json.Marshal(s.status(t))
			return strings.Contains(string(b), "switchboard auth login up")
		})

		authLogin(t, config, tokenEnv)
		works(t, s)

		// A restart keeps the consent (its refresh token is refreshed).
		s.proc.stop(5 * time.Second)
		s, config = startA(t, dir, o, env)
		works(t, s)

		// The refresh token revoked at the authorization server: the
		// next call fails and names the way out.
		revoke(t, issuer, "sb-code", "sb-code-5a1f3b", lastRefreshToken(t, issuer, "sb-code"))
		res, err := call(t, s)
		wantLogin(t, "after the refresh token was revoked", res, err)

		// A new consent: the running A takes it up.
		authLogin(t, config, tokenEnv)
		works(t, s)
	})
}

// wantLogin checks that a call failed with an error naming auth login.
func wantLogin(t *testing.T, when string, res *mcp.CallToolResult, err error) {
	t.Helper()
	var msg string
	switch {
	case err != nil:
		msg = err.Error()
	case res.IsError:
		msg = textOf(res)
	default:
		t.Fatalf("%s: the call succeeded: %q", when, textOf(res))
	}
	if !strings.Contains(msg, "switchboard auth login up") {
		t.Fatalf("%s: the error does not name `switchboard auth login up`: %q", when, msg)
	}
}

// authLogin runs `switchboard auth login up` and plays the person: it
// follows the printed URL, with alice as the login_hint the authserver
// approves at once.
func authLogin(t *testing.T, config string, env []string) {
	t.Helper()
	authLoginAs(t, config, env, "alice")
}

// authLoginAs is authLogin with user signing in at the authorization
// server.
func authLoginAs(t *testing.T, config string, env []string, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, switchboard, "auth", "login", "up", "--config", config, "--no-browser")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		cmd.Wait()
		t.Fatalf("auth login printed no URL:\n%s", stderr.String())
	}
	u, err := url.Parse(strings.TrimSpace(sc.Text()))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("login_hint", user)
	u.RawQuery = q.Encode()
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatalf("following the authorization URL: %v", err)
	}
	resp.Body.Close()
	for sc.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("auth login: %v\n%s", err, stderr.String())
	}
}

// lastRefreshToken is the refresh token the authorization server last
// issued to client: what A's sealed token store holds.
func lastRefreshToken(t *testing.T, issuer, client string) string {
	t.Helper()
	resp, err := http.Get(issuer + "/test/refresh-token?client=" + url.QueryEscape(client))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || len(b) == 0 {
		t.Fatalf("the refresh token issued to %s: %d %q %v", client, resp.StatusCode, b, err)
	}
	return string(b)
}

// revoke revokes token at the authorization server (RFC 7009).
func revoke(t *testing.T, issuer, id, secret, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, issuer+"/revoke", strings.NewReader(url.Values{"token": {token}, "token_type_hint": {"refresh_token"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
}
