package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
)

// TestOAuthEnterpriseRealIdPAndAS: the enterprise grant against a real
// pair, two e2e/authserver instances: one the enterprise identity
// provider (alice's ID token from its authorization-code flow, exchanged
// there for an ID-JAG), the other the authorization server of B, a
// protected MCP server (it takes the ID-JAG in a JWT bearer grant,
// checking it against the identity provider's JWKS). A call through A
// reaches B as alice, after one token exchange and one JWT bearer grant;
// the next call makes neither. An ID token issued to another client, or
// an expired one, makes the calls fail at once with an error that names
// the server and says why. No token is in A's log, /status or token file.
func TestOAuthEnterpriseRealIdPAndAS(t *testing.T) {
	bRes := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	asPort := freePort(t)
	asIssuer := fmt.Sprintf("http://127.0.0.1:%d", asPort)
	callback := "http://127.0.0.1:1/callback" // never reached: the code is read from the redirect
	idpClient := func(id string, extra map[string]any) map[string]any {
		c := map[string]any{"id": id, "secret": id + "-s3cret", "redirectURIs": []string{callback},
			"grants": []string{"authorization_code", grantTokenExchange},
			"idJag":  map[string]string{asIssuer: "sb-mcp", "http://127.0.0.1:1/elsewhere": "sb-mcp"}}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	idp := startAuthServer(t, map[string]any{
		"clients": []any{
			idpClient("sb-idp", nil),
			idpClient("sb-idp-stale", map[string]any{"idTokenTtlSeconds": -60}),
			idpClient("sb-idp-short", map[string]any{"idJag": map[string]string{asIssuer: "sb-mcp-short"}}),
			idpClient("sb-idp-shortjag", map[string]any{"idJagTtlSeconds": -60}),
			idpClient("other-app", map[string]any{"idJag": map[string]string{}}),
		},
		"users": []any{map[string]any{"id": "alice"}, map[string]any{"id": "bob"}},
	})
	startAuthServer(t, map[string]any{
		"clients": []any{
			map[string]any{"id": "sb-mcp", "secret": "sb-mcp-5e0d", "grants": []string{grantJWTBearer}},
			map[string]any{"id": "sb-mcp-short", "secret": "sb-mcp-short-1f3a", "grants": []string{grantJWTBearer}, "ttlSeconds": 20},
			map[string]any{"id": "other-mcp", "secret": "other-mcp-77a1", "grants": []string{grantJWTBearer}},
		},
		"trustedIdps": []any{map[string]any{"issuer": idp}},
	}, "--listen", strings.TrimPrefix(asIssuer, "http://"))

	// B: the protected MCP server, which audits each call with the
	// caller its token names.
	bDir := t.TempDir()
	auditFile := filepath.Join(bDir, "audit.jsonl")
	startSwitchboardIn(t, bDir, bDir, map[string]any{
		"listen":     strings.TrimPrefix(bRes, "http://"),
		"mcpServers": map[string]any{"f": fixtureServer("f")},
		"audit":      map[string]any{"enabled": true, "file": auditFile, "arguments": true},
		"auth": map[string]any{"oauth": map[string]any{
			"resource": bRes, "issuer": asIssuer, "audience": []string{bRes, bRes + "/mcp"},
		}},
	}, nil)

	// startA runs switchboard A with B as the enterprise server "up", the
	// ID token read from idTokenFile.
	startA := func(t *testing.T, idpClientID, idTokenFile string, extra map[string]any, env ...string) *sb {
		t.Helper()
		o := map[string]any{"grant": "enterprise", "clientId": "sb-mcp", "clientSecret": "secret://env/SB_MCP",
			"idpIssuer": idp, "idpClientId": idpClientID, "idpClientSecret": "secret://env/SB_IDP",
			"idToken": "secret://file" + idTokenFile}
		for k, v := range extra {
			o[k] = v
		}
		run := t.TempDir()
		return startSwitchboardIn(t, run, run, map[string]any{
			"mcpServers": map[string]any{"up": map[string]any{"url": bRes + "/mcp", "type": "http", "oauth": o}},
		}, append([]string{"SB_MCP=sb-mcp-5e0d", "SB_IDP=" + idpClientID + "-s3cret", "SWITCHBOARD_TOKEN_DIR=" + filepath.Join(run, "tokens")}, env...))
	}
	echo := func(t *testing.T, s *sb, text string) (string, error) {
		t.Helper()
		cs := s.client(t, nil)
		defer cs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_up_mcp_f_echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", fmt.Errorf("tool error: %s", textOf(res))
		}
		return textOf(res), nil
	}

	dir := t.TempDir()
	idFile := filepath.Join(dir, "id_token")
	aliceID := idToken(t, idp, "sb-idp", callback, "alice")
	writeSecretFile(t, idFile, aliceID)
	idpBefore, asBefore := grantCounts(t, idp), grantCounts(t, asIssuer)
	a := startA(t, "sb-idp", idFile, nil)
	var last string
	testutil.Eventually(t, 30*time.Second, "a call through A to B", func() bool {
		out, err := echo(t, a, "alice first")
		if err == nil && strings.Contains(out, "alice first") {
			return true
		}
		if msg := fmt.Sprint(out, err); msg != last {
			t.Logf("call: %s", msg)
			last = msg
		}
		return false
	})
	if out, err := echo(t, a, "alice second"); err != nil || !strings.Contains(out, "alice second") {
		t.Fatalf("the second call: %q %v", out, err)
	}
	if who := auditedCaller(t, auditFile, "alice first"); who != "oauth:alice" {
		t.Errorf("B served the first call as %q, want oauth:alice", who)
	}
	if who := auditedCaller(t, auditFile, "alice second"); who != "oauth:alice" {
		t.Errorf("B served the second call as %q, want oauth:alice", who)
	}
	idpAfter, asAfter := grantCounts(t, idp), grantCounts(t, asIssuer)
	if n := idpAfter[grantTokenExchange] - idpBefore[grantTokenExchange]; n != 1 {
		t.Errorf("%d token exchanges at the identity provider, want 1", n)
	}
	if n := asAfter[grantJWTBearer] - asBefore[grantJWTBearer]; n != 1 {
		t.Errorf("%d JWT bearer grants at B's authorization server, want 1", n)
	}
	for g, n := range asAfter {
		if g != grantJWTBearer && n != asBefore[g] {
			t.Errorf("B's authorization server answered %d %s requests", n-asBefore[g], g)
		}
	}

	// No token in A's log, /status or token file: not the ID token, nor
	// any JWT (the ID-JAG, the access token).
	st, _ := json.Marshal(a.status(t))
	enc, err := os.ReadFile(filepath.Join(a.dir, "tokens", "tokens.enc"))
	if err != nil {
		t.Fatalf("A's token file: %v", err)
	}
	for what, text := range map[string]string{"A's log": a.Stderr(), "A's /status": string(st), "A's token file": string(enc)} {
		if strings.Contains(text, aliceID) || strings.Contains(text, "eyJ") {
			t.Errorf("a token (JWT) is in %s", what)
		}
	}

	// An ID token the identity provider issued to another client, put in
	// place of the person's while A runs: the next call fails at once,
	// naming the server and why; the person's own again, and calls work,
	// on the same session.
	// B's authorization server issues sb-mcp-short 20 s tokens, under
	// the 30 s before expiry when switchboard renews: every request runs
	// the flow again, with the ID token read afresh.
	t.Run("refused_id_token_while_running", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "id_token")
		own := idToken(t, idp, "sb-idp-short", callback, "alice")
		writeSecretFile(t, file, own)
		b := startA(t, "sb-idp-short", file, map[string]any{"clientId": "sb-mcp-short", "clientSecret": "secret://env/SB_MCP_SHORT",
			"tokenStore": "memory"}, "SB_MCP_SHORT=sb-mcp-short-1f3a")
		testutil.Eventually(t, 30*time.Second, "a call through A with sb-mcp-short", func() bool {
			out, err := echo(t, b, "alice short")
			return err == nil && strings.Contains(out, "alice short")
		})
		before := grantCounts(t, idp)[grantTokenExchange]
		if out, err := echo(t, b, "alice short again"); err != nil || !strings.Contains(out, "alice short again") {
			t.Fatalf("a call: %q %v", out, err)
		}
		if grantCounts(t, idp)[grantTokenExchange] == before {
			t.Fatal("a call with a token 20 s from its expiry ran no new flow")
		}
		restarts := b.server(t, "up").Restarts
		writeSecretFile(t, file, idToken(t, idp, "other-app", callback, "alice"))
		out, err := echo(t, b, "refused")
		if err == nil {
			t.Fatalf("a call with another client's ID token succeeded: %q", out)
		}
		for _, want := range []string{"server 'up'", "identity provider", `refused: invalid_grant: subject_token: the ID token was issued to "other-app", not to client "sb-idp-short"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %s: %q", want, err)
			}
		}
		t.Logf("refused: %v", err)
		writeSecretFile(t, file, own)
		testutil.Eventually(t, 30*time.Second, "a call with the person's ID token again", func() bool {
			out, err := echo(t, b, "alice back")
			return err == nil && strings.Contains(out, "alice back")
		})
		if n := b.server(t, "up").Restarts; n != restarts {
			t.Errorf("the session to B was restarted %d times: a refused token is not a lost connection", n-restarts)
		}
	})

	// An expired ID token when A starts: the server stays down, and its
	// state in /status says why.
	t.Run("expired_id_token_at_start", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "id_token")
		writeSecretFile(t, file, idToken(t, idp, "sb-idp-stale", callback, "alice"))
		b := startA(t, "sb-idp-stale", file, map[string]any{"tokenStore": "memory"})
		var last string
		testutil.Eventually(t, 30*time.Second, "/status to say the ID token is expired", func() bool {
			last = b.server(t, "up").LastError
			return strings.Contains(last, "the ID token is expired")
		})
		t.Logf("/status: %s", last)
	})

	// The authorization server's own checks of an ID-JAG, by hand.
	t.Run("authorization_server_checks", func(t *testing.T) {
		id := idToken(t, idp, "sb-idp", callback, "bob")
		jag := func(idpClient, subject, audience string) string {
			t.Helper()
			code, body := tokenRequest(t, idp, idpClient, idpClient+"-s3cret", url.Values{
				"grant_type": {grantTokenExchange}, "requested_token_type": {tokenTypeIDJAG},
				"subject_token": {subject}, "subject_token_type": {tokenTypeIDToken},
				"audience": {audience}, "resource": {bRes}, "scope": {"mcp:tools"}})
			var r struct {
				AccessToken     string `json:"access_token"`
				IssuedTokenType string `json:"issued_token_type"`
			}
			json.Unmarshal(body, &r)
			if code != http.StatusOK || r.AccessToken == "" || r.IssuedTokenType != tokenTypeIDJAG {
				t.Fatalf("ID-JAG from %s for %s: %d %s", idpClient, audience, code, body)
			}
			return r.AccessToken
		}
		bearer := func(client, secret, assertion string) (int, string) {
			code, body := tokenRequest(t, asIssuer, client, secret, url.Values{"grant_type": {grantJWTBearer}, "assertion": {assertion}})
			return code, string(body)
		}
		refused := func(what string, code int, body, why string) {
			t.Helper()
			var e struct {
				Error       string `json:"error"`
				Description string `json:"error_description"`
			}
			json.Unmarshal([]byte(body), &e)
			if code != http.StatusBadRequest || e.Error != "invalid_grant" || !strings.Contains(e.Description, why) {
				t.Errorf("%s: %d %s, want invalid_grant saying %q", what, code, body, why)
			}
		}
		good := jag("sb-idp", id, asIssuer)
		code, body := bearer("other-mcp", "other-mcp-77a1", good)
		refused("another client's ID-JAG", code, body, `issued for client "sb-mcp", not "other-mcp"`)
		code, body = bearer("sb-mcp", "sb-mcp-5e0d", jag("sb-idp", id, "http://127.0.0.1:1/elsewhere"))
		refused("an ID-JAG for another audience", code, body, "not this authorization server")
		code, body = bearer("sb-mcp", "sb-mcp-5e0d", jag("sb-idp-shortjag", idToken(t, idp, "sb-idp-shortjag", callback, "bob"), asIssuer))
		refused("an expired ID-JAG", code, body, "expired")
		if code, body = bearer("sb-mcp", "sb-mcp-5e0d", good); code != http.StatusOK || !strings.Contains(body, "access_token") {
			t.Fatalf("the ID-JAG for sb-mcp at its authorization server: %d %s", code, body)
		}
		code, body = bearer("sb-mcp", "sb-mcp-5e0d", good)
		refused("an ID-JAG used twice", code, body, "already used")
		// The identity provider issues none for an audience the client
		// may not ask for.
		code, b := tokenRequest(t, idp, "other-app", "other-app-s3cret", url.Values{
			"grant_type": {grantTokenExchange}, "requested_token_type": {tokenTypeIDJAG},
			"subject_token": {idToken(t, idp, "other-app", callback, "bob")}, "subject_token_type": {tokenTypeIDToken},
			"audience": {asIssuer}, "resource": {bRes}})
		if code != http.StatusBadRequest || !strings.Contains(string(b), "invalid_target") {
			t.Errorf("an ID-JAG for an audience the client may not ask for: %d %s", code, b)
		}
	})
}

// idToken is name's ID token from the identity provider at issuer, issued
// to client (secret client-s3cret) by the authorization-code flow with
// PKCE, the person approving at once (login_hint).
func idToken(t *testing.T, issuer, client, callback, name string) string {
	t.Helper()
	oc := &oauth2.Config{ClientID: client, ClientSecret: client + "-s3cret", RedirectURL: callback, Scopes: []string{"openid"},
		Endpoint: oauth2.Endpoint{AuthURL: issuer + "/authorize", TokenURL: issuer + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}
	verifier := oauth2.GenerateVerifier()
	u := oc.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("login_hint", name))
	var code string
	hc := &http.Client{CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), callback) {
			code = r.URL.Query().Get("code")
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatalf("%s at %s: authorize: %v", name, client, err)
	}
	resp.Body.Close()
	if code == "" {
		t.Fatalf("%s at %s: no code (status %d)", name, client, resp.StatusCode)
	}
	tok, err := oc.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("%s at %s: code exchange: %v", name, client, err)
	}
	id, _ := tok.Extra("id_token").(string)
	if id == "" {
		t.Fatalf("%s at %s: no id_token", name, client)
	}
	return id
}

// tokenRequest posts form to issuer's token endpoint as client.
func tokenRequest(t *testing.T, issuer, client, secret string, form url.Values) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, issuer+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// writeSecretFile replaces file with v, as a secret mount is swapped.
func writeSecretFile(t *testing.T, file, v string) {
	t.Helper()
	if err := os.WriteFile(file+".new", []byte(v+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
}

// auditedCaller is the caller B's audit log names for the echo call of
// text ("" none).
func auditedCaller(t *testing.T, file, text string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ Token, Original, Arguments string }
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Original != "echo" {
			continue
		}
		var args struct{ Text string }
		if json.Unmarshal([]byte(rec.Arguments), &args) == nil && args.Text == text {
			return rec.Token
		}
	}
	return ""
}
