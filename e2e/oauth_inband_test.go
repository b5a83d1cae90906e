package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestOAuthConsentInBand: switchboard (A), with B's redirect URI on its
// own listener (/oauth/callback), is consented to once by `auth login`;
// then the refresh token is revoked at the real authorization server. The
// next call, from a client that declared URL-mode elicitation, is answered
// with -32042 naming A's start URL; a browser (a cookie jar, the person
// named at the authorization server by login_hint) follows it, A sends
// notifications/elicitation/complete, and the call made again goes
// through, with a new authorization code at the authorization server. A
// browser that did not start the flow cannot complete it, and a client
// that declared form mode only is told to run auth login.
func TestOAuthConsentInBand(t *testing.T) {
	rig := newConsentRig(t, "sb-code-77e1c0", 20, "alice")
	aAddr, redirect, bRes, issuer := rig.aAddr, rig.redirect, rig.bRes, rig.issuer

	dir := t.TempDir()
	env := []string{"SB_CODE=sb-code-77e1c0", "SWITCHBOARD_TOKEN_DIR=" + filepath.Join(dir, "tokens")}
	cfg := map[string]any{"listen": aAddr, "mcpServers": map[string]any{"up": map[string]any{"url": bRes + "/mcp", "type": "http",
		"oauth": map[string]any{"grant": "authorization_code", "clientId": "sb-code", "clientSecret": "secret://env/SB_CODE", "redirectUri": redirect}}}}
	// auth login takes the redirect on A's port before A listens there.
	cfgFile := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	authLogin(t, cfgFile, env)
	run := t.TempDir()
	a := startSwitchboardIn(t, run, run, cfg, env)

	completed := make(chan string, 4)
	urlClient := a.client(t, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			completed <- r.Params.ElicitationID
		},
	})
	call := func(cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_up_mcp_f_add", Arguments: map[string]any{"a": 2, "b": 3}})
	}
	added := func(res *mcp.CallToolResult, err error) bool {
		return err == nil && !res.IsError && strings.Contains(textOf(res), "\n5\n")
	}
	testutil.Eventually(t, 30*time.Second, "a call through A and B after auth login", func() bool { return added(call(urlClient)) })
	codes := grantCounts(t, issuer)["authorization_code"]

	revoke(t, issuer, "sb-code", "sb-code-77e1c0", lastRefreshToken(t, issuer, "sb-code"))

	// A client that declared form mode only is not sent the URL.
	formClient := a.client(t, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	res, err := call(formClient)
	wantLogin(t, "a form-only client's call after the refresh token was revoked", res, err)

	res, err = call(urlClient)
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("the call after the refresh token was revoked: %v %v, want a URL elicitation error (-32042)", res, err)
	}
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(we.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("the error's data: %s (%v)", we.Data, err)
	}
	el := data.Elicitations[0]
	if el.Mode != "url" || !strings.HasPrefix(el.URL, "http://"+aAddr+"/oauth/start/") || el.ElicitationID == "" {
		t.Fatalf("the elicitation: %+v", el)
	}

	// A browser that did not open the start URL cannot complete the flow:
	// the person's own browser follows the start URL to the authorization
	// server, and the redirect back is sent to another browser.
	var back string
	thief := &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), redirect) {
			back = r.URL.String()
			return http.ErrUseLastResponse
		}
		return addLoginHint(r, issuer)
	}}
	jar, _ := cookiejar.New(nil)
	thief.Jar = jar
	resp, err := thief.Get(el.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if back == "" {
		t.Fatalf("the start URL did not lead back to A's callback (%s)", resp.Status)
	}
	resp, err = http.Get(back) // no cookie: another browser
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the redirect in a browser that did not start the flow: %s, want 403", resp.Status)
	}

	// The flow is used up: the next call asks again, and this time the
	// person's browser goes all the way.
	res, err = call(urlClient)
	if !errors.As(err, &we) || we.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("the call after a refused redirect: %v %v, want another URL elicitation", res, err)
	}
	if err := json.Unmarshal(we.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("the error's data: %s (%v)", we.Data, err)
	}
	el = data.Elicitations[0]
	jar, _ = cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error { return addLoginHint(r, issuer) }}
	resp, err = browser.Get(el.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the person's browser ended at %s", resp.Status)
	}
	// The spent flow's elicitation was completed too (it ended, without
	// a consent): wait for this one's.
	for done := false; !done; {
		select {
		case id := <-completed:
			done = id == el.ElicitationID
		case <-time.After(30 * time.Second):
			t.Fatal("A did not send notifications/elicitation/complete")
		}
	}
	if res, err := call(urlClient); !added(res, err) {
		t.Fatalf("the call made again after consent: %v %v", textOf(res), err)
	}
	if got := grantCounts(t, issuer)["authorization_code"]; got != codes+1 {
		t.Errorf("authorization codes exchanged: %d after the in-band consent, want %d", got, codes+1)
	}

	// A 2026-07-28 client keeps no session stream: its call asks for the
	// consent as an MRTR input request, and once the client's retry
	// accepted it (its person's browser went through), the call goes on.
	revoke(t, issuer, "sb-code", "sb-code-77e1c0", lastRefreshToken(t, issuer, "sb-code"))
	var asked []string
	modern := mcp.NewClient(&mcp.Implementation{Name: "e2e-modern", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params.Mode+" "+r.Params.URL)
			jar, _ := cookiejar.New(nil)
			browser := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error { return addLoginHint(r, issuer) }}
			resp, err := browser.Get(r.Params.URL)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mcs, err := modern.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + aAddr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mcs.Close()
	if v := mcs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the modern client speaks %s", v)
	}
	if res, err := call(mcs); !added(res, err) {
		t.Fatalf("a 2026-07-28 client's call after the refresh token was revoked again: %q %v (asked %q)", textOf(res), err, asked)
	}
	if len(asked) != 1 || !strings.HasPrefix(asked[0], "url http://"+aAddr+"/oauth/start/") {
		t.Errorf("the 2026-07-28 client was asked %q, want one URL elicitation of A's start URL", asked)
	}
	if got := grantCounts(t, issuer)["authorization_code"]; got != codes+2 {
		t.Errorf("authorization codes exchanged: %d after the second in-band consent, want %d", got, codes+2)
	}
}

// consentRig is what a test of consent in band runs against: the real
// authorization server, whose client sb-code has A's callback as its
// redirect URI, and B, switchboard as its protected resource in front of
// the fixture, auditing each call with the person it was made as. A is
// the test's own, listening on aAddr.
type consentRig struct{ aAddr, redirect, bRes, issuer, audit string }

// newConsentRig starts the authorization server, with users and sb-code
// authenticated by secret (its access tokens live ttl seconds; 0: the
// server's default), and B.
func newConsentRig(t *testing.T, secret string, ttl int, users ...string) consentRig {
	t.Helper()
	r := consentRig{aAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), bRes: fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}
	r.redirect = "http://" + r.aAddr + "/oauth/callback"
	client := map[string]any{"id": "sb-code", "secret": secret, "redirectURIs": []string{r.redirect},
		"grants": []string{"authorization_code", "refresh_token"}}
	if ttl != 0 {
		client["ttlSeconds"] = ttl
	}
	var us []any
	for _, u := range users {
		us = append(us, map[string]any{"id": u})
	}
	r.issuer = startAuthServer(t, map[string]any{"clients": []any{client}, "users": us})
	bDir := t.TempDir()
	r.audit = filepath.Join(bDir, "audit.jsonl")
	startSwitchboardIn(t, bDir, bDir, map[string]any{
		"listen":     strings.TrimPrefix(r.bRes, "http://"),
		"mcpServers": map[string]any{"f": fixtureServer("f")},
		"audit":      map[string]any{"enabled": true, "file": r.audit, "arguments": true},
		"auth": map[string]any{"oauth": map[string]any{
			"resource": r.bRes, "issuer": r.issuer, "audience": []string{r.bRes + "/mcp", "sb-code"},
		}},
	}, nil)
	return r
}

// addLoginHint names the person at the authorization server's authorize
// endpoint, as the person signing in there would.
func addLoginHint(r *http.Request, issuer string) error {
	if strings.HasPrefix(r.URL.String(), issuer+"/authorize") {
		q := r.URL.Query()
		q.Set("login_hint", "alice")
		r.URL.RawQuery = q.Encode()
	}
	return nil
}
