package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestOAuthTokenExchangePerCaller: switchboard A, a protected resource of
// the real authorization server (auth.oauth), calls B, another protected
// resource of it, with the token_exchange grant: 100 people, each with
// an access token of their own from the authorization server (the
// authorization-code flow), call through A at once, and B, which checks
// every token itself and names the caller in its audit log, sees every
// call made as the person who made it: 0 calls with another's token.
// A restart of A keeps the exchanged tokens (they carry refresh tokens):
// the calls after it make no new exchange, only refreshes.
func TestOAuthTokenExchangePerCaller(t *testing.T) {
	const users = 100
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "client.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	bRes := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	aRes := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	callback := "http://127.0.0.1:1/callback" // never reached: the test reads the code from the redirect
	var people []any
	for i := range users {
		people = append(people, map[string]any{"id": person(i)})
	}
	// ttlSeconds 20: under switchboard's 30 s early expiry, so every call
	// refreshes its caller's exchanged token.
	issuer := startAuthServer(t, map[string]any{
		"clients": []any{
			map[string]any{"id": "people-app", "secret": "people-app-41c9", "redirectURIs": []string{callback},
				"grants": []string{"authorization_code"}},
			map[string]any{"id": "sb-exchange", "secret": "sb-exchange-7d10", "ttlSeconds": 20, "audience": []string{bRes + "/mcp"},
				"grants": []string{"client_credentials", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange"}},
			map[string]any{"id": "sb-exchange-key", "publicKey": pubPEM, "audience": []string{bRes + "/mcp"},
				"grants": []string{"client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"}},
		},
		"users": people,
	})

	// B: the protected MCP server, which audits every call with the
	// caller its token names (token: oauth:SUBJECT) and its arguments.
	bDir := t.TempDir()
	auditFile := filepath.Join(bDir, "audit.jsonl")
	startSwitchboardIn(t, bDir, bDir, map[string]any{
		"listen":     strings.TrimPrefix(bRes, "http://"),
		"mcpServers": map[string]any{"f": fixtureServer("f")},
		"audit":      map[string]any{"enabled": true, "file": auditFile, "arguments": true},
		"auth": map[string]any{"oauth": map[string]any{
			"resource": bRes, "issuer": issuer, "scopes": []string{"mcp:tools"},
			"audience": []string{bRes, bRes + "/mcp"},
		}},
	}, nil)

	// A: the people's tokens (audience people-app) admitted, B behind it
	// with token_exchange.
	tokens := filepath.Join(t.TempDir(), "tokens")
	const staticToken = "static-caller-token-9f2e"
	startA := func() *sb {
		run := t.TempDir()
		return startSwitchboardIn(t, run, run, map[string]any{
			"listen": strings.TrimPrefix(aRes, "http://"),
			"auth": map[string]any{"tokens": []string{staticToken},
				"oauth": map[string]any{"resource": aRes, "issuer": issuer, "audience": []string{"people-app"}}},
			"mcpServers": map[string]any{"up": map[string]any{"url": bRes + "/mcp", "type": "http", "protocol": "2026-07-28",
				"oauth": map[string]any{"grant": "token_exchange", "clientId": "sb-exchange", "clientSecret": "secret://env/SB_EXCHANGE",
					"scopes": []string{"mcp:tools", "offline_access"}}}},
		}, []string{"SB_EXCHANGE=sb-exchange-7d10", "SWITCHBOARD_TOKEN_DIR=" + tokens})
	}
	a := startA()

	// Each person's access token, by the authorization-code flow.
	access := make([]string, users)
	for i := range users {
		access[i] = personToken(t, issuer, callback, person(i))
	}

	// round: every person calls echo through A at once, n times each,
	// with their own name in the text.
	round := func(t *testing.T, tag string, n int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, users*n)
		for i := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- callAs(aRes+"/mcp", access[i], n, func(k int) string { return fmt.Sprintf("%s %s %d", person(i), tag, k) })
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	// Until B lists its tools to A (as A's own client), a call may find
	// no tool yet.
	testutil.Eventually(t, 30*time.Second, "A to list B's tools", func() bool {
		return callAs(aRes+"/mcp", access[0], 1, func(int) string { return person(0) + " warmup 0" }) == nil
	})
	round(t, "first", 3)
	checkAudit(t, auditFile, users)

	// A caller with a static token has nothing to exchange: its calls
	// fail and say why, more of them than open the breaker, and the
	// people's calls go on at once.
	if err := staticCalls(aRes+"/mcp", staticToken, 7); err != nil {
		t.Fatal(err)
	}
	if err := callAs(aRes+"/mcp", access[1], 1, func(int) string { return person(1) + " after-static 0" }); err != nil {
		t.Fatalf("a call after the static caller's: %v", err)
	}

	before := grantCounts(t, issuer)
	if n := before["urn:ietf:params:oauth:grant-type:token-exchange"]; n < users || n > 2*users {
		t.Fatalf("%d token exchanges for %d people: want one each (a few more if a refresh failed)", n, users)
	}

	// A restart keeps every person's token: no new exchange, refreshes.
	a.proc.stop(5 * time.Second)
	a = startA()
	testutil.Eventually(t, 30*time.Second, "A to list B's tools again", func() bool {
		return callAs(aRes+"/mcp", access[0], 1, func(int) string { return person(0) + " warmup 1" }) == nil
	})
	round(t, "second", 2)
	checkAudit(t, auditFile, users)
	after := grantCounts(t, issuer)
	if n, m := before["urn:ietf:params:oauth:grant-type:token-exchange"], after["urn:ietf:params:oauth:grant-type:token-exchange"]; m != n {
		t.Errorf("token exchanges: %d before the restart, %d after: a kept token was not used", n, m)
	}
	if n, m := before["refresh_token"], after["refresh_token"]; m < n+users {
		t.Errorf("refreshes: %d before the restart, %d after: want at least %d more", n, m, users)
	}
	// The client authenticated by a key (private_key_jwt) instead of a
	// secret: a person's calls reach B as that person too.
	kRes := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	kRun := t.TempDir()
	startSwitchboardIn(t, kRun, kRun, map[string]any{
		"listen": strings.TrimPrefix(kRes, "http://"),
		"auth":   map[string]any{"oauth": map[string]any{"resource": kRes, "issuer": issuer, "audience": []string{"people-app"}}},
		"mcpServers": map[string]any{"up": map[string]any{"url": bRes + "/mcp", "type": "http", "protocol": "2026-07-28",
			"oauth": map[string]any{"grant": "token_exchange", "clientId": "sb-exchange-key", "privateKey": "secret://file" + keyFile,
				"scopes": []string{"mcp:tools"}, "tokenStore": "memory"}}},
	}, nil)
	testutil.Eventually(t, 30*time.Second, "a call through the private_key_jwt client", func() bool {
		return callAs(kRes+"/mcp", access[7], 1, func(int) string { return person(7) + " key 0" }) == nil
	})
	if err := callAs(kRes+"/mcp", access[8], 2, func(k int) string { return fmt.Sprintf("%s key %d", person(8), k) }); err != nil {
		t.Fatal(err)
	}
	checkAudit(t, auditFile, users)

	// No person's access token in A's log or /status.
	st, _ := json.Marshal(a.status(t))
	for i, tok := range access {
		if strings.Contains(a.Stderr(), tok) || strings.Contains(string(st), tok) {
			t.Errorf("%s's access token is in A's log or /status", person(i))
		}
	}
	// A keeps the tokens sealed: no person's token in its store.
	b, err := os.ReadFile(filepath.Join(tokens, "tokens.enc"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "refresh") || strings.Contains(string(b), person(0)) {
		t.Error("the token store is not sealed")
	}
}

func person(i int) string { return fmt.Sprintf("p%03d", i) }

// callAs opens a session at url with token and calls echo n times, with
// text(k) as the text of the k-th call.
func callAs(url, token string, n int, text func(k int) string) error {
	// Generous: 100 callers at once on a shared machine, under -race.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs, err := connectAs(ctx, url, token)
	if err != nil {
		return err
	}
	defer cs.Close()
	for k := range n {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_up_mcp_f_echo", Arguments: map[string]any{"text": text(k)}})
		if err != nil {
			return fmt.Errorf("%s: %w", text(k), err)
		}
		if res.IsError || !strings.Contains(textOf(res), text(k)) {
			return fmt.Errorf("%s: %q", text(k), textOf(res))
		}
	}
	return nil
}

// connectAs opens a session at url that sends token as its bearer.
func connectAs(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return cs, nil
}

// staticCalls calls echo n times with a static token of auth.tokens: each
// call must fail, naming what the caller lacks.
func staticCalls(url, token string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := connectAs(ctx, url, token)
	if err != nil {
		return err
	}
	defer cs.Close()
	for k := range n {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_up_mcp_f_echo", Arguments: map[string]any{"text": "static"}})
		msg := ""
		switch {
		case err != nil:
			msg = err.Error()
		case !res.IsError:
			return fmt.Errorf("static call %d succeeded: %q", k, textOf(res))
		default:
			msg = textOf(res)
		}
		if !strings.Contains(msg, "no access token of the identity provider to exchange") {
			return fmt.Errorf("static call %d: %q does not say the caller has no token to exchange", k, msg)
		}
	}
	return nil
}

// checkAudit reads B's audit log: every echo call was made as the person
// whose name its text carries, and each of the people called.
func checkAudit(t *testing.T, file string, users int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen, calls, wrong := map[string]int{}, 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Token, Original, Outcome, Arguments string
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if rec.Original != "echo" {
			continue
		}
		var args struct{ Text string }
		if err := json.Unmarshal([]byte(rec.Arguments), &args); err != nil {
			t.Fatalf("audit arguments %q: %v", rec.Arguments, err)
		}
		who, _, _ := strings.Cut(args.Text, " ")
		calls++
		if rec.Token != "oauth:"+who {
			wrong++
			if wrong <= 5 {
				t.Errorf("B served %q's call as %q", who, rec.Token)
			}
		}
		seen[who]++
	}
	if wrong > 0 || len(seen) != users {
		t.Fatalf("%d of %d calls at B were made with another's token; %d of %d people seen", wrong, calls, len(seen), users)
	}
	t.Logf("%d calls at B from %d people, each as its caller", calls, len(seen))
}

// personToken is name's access token from the authorization server: the
// authorization-code flow with PKCE, the person approving at once
// (login_hint), the code read from the redirect to callback.
func personToken(t *testing.T, issuer, callback, name string) string {
	t.Helper()
	oc := &oauth2.Config{ClientID: "people-app", ClientSecret: "people-app-41c9", RedirectURL: callback, Scopes: []string{"openid"},
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
		t.Fatalf("%s: authorize: %v", name, err)
	}
	resp.Body.Close()
	if code == "" {
		t.Fatalf("%s: no code (status %d)", name, resp.StatusCode)
	}
	tok, err := oc.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("%s: code exchange: %v", name, err)
	}
	return tok.AccessToken
}

// grantCounts is how many token requests of each grant type the
// authorization server answered.
func grantCounts(t *testing.T, issuer string) map[string]int {
	t.Helper()
	resp, err := http.Get(issuer + "/test/grants")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]int{}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}
