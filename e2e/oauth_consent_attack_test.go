package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestOAuthConsentInBandAttacks: linked accounts (perCaller) on A, with
// the real authorization server, attacked by mallory, another caller,
// and by third-party pages in alice's browser:
//   - a guessed flow ID starts nothing (404);
//   - a cross-site POST to alice's start URL (a page of mallory's making
//     alice's browser confirm) is refused, and her flow stays unstarted;
//   - login CSRF: mallory's own redirect (his code, his account)
//     delivered in alice's browser links nothing (403), spends his flow,
//     and leaves alice's flow hers;
//   - alice's redirect completes her flow once; replayed, it is unknown;
//   - a redirect whose iss names another issuer (mix-up, RFC 9207) is
//     not exchanged: no code reaches the token endpoint, the callback
//     says the consent was not completed (502), and mallory is asked
//     again;
//   - the authorization URL carries a PKCE S256 challenge, and the state
//     never appears in the start URL;
//   - every answer of the two routes is no-store, no-referrer and may
//     not be framed, and the confirm page's policy lets its POST be
//     redirected to the authorization server;
//   - no code, state, refresh token or flow ID appears in A's log, its
//     /status, its metrics or its audit.
func TestOAuthConsentInBandAttacks(t *testing.T) {
	rig := newConsentRig(t, "sb-code-5c2e91", 0, "svc", "alice", "mallory")
	aAddr, redirect, bRes, issuer := rig.aAddr, rig.redirect, rig.bRes, rig.issuer

	dir := t.TempDir()
	const aliceTok, malloryTok = "alice-static-7a0c1d2e", "mallory-static-e93b5f40"
	env := []string{"SB_CODE=sb-code-5c2e91", "ALICE_TOKEN=" + aliceTok, "MALLORY_TOKEN=" + malloryTok,
		"SWITCHBOARD_TOKEN_DIR=" + filepath.Join(dir, "tokens")}
	auditFile := filepath.Join(dir, "audit.jsonl")
	cfg := map[string]any{"listen": aAddr,
		"auth":  map[string]any{"tokens": []string{"secret://env/ALICE_TOKEN", "secret://env/MALLORY_TOKEN"}},
		"audit": map[string]any{"enabled": true, "file": auditFile, "arguments": true},
		"mcpServers": map[string]any{"up": map[string]any{"url": bRes + "/mcp", "type": "http", "protocol": "2026-07-28",
			"oauth": map[string]any{"grant": "authorization_code", "clientId": "sb-code", "clientSecret": "secret://env/SB_CODE",
				"redirectUri": redirect, "perCaller": true}}}}
	cfgFile := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	authLoginAs(t, cfgFile, env, "svc")
	run := t.TempDir()
	a := startSwitchboardIn(t, run, run, cfg, env)
	codesBefore := grantCounts(t, issuer)["authorization_code"]

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	connect := func(name, token string) (*mcp.ClientSession, chan string) {
		completed := make(chan string, 8)
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
				completed <- r.Params.ElicitationID
			},
		})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + aAddr + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs, completed
	}
	echo := func(cs *mcp.ClientSession, text string) (*mcp.CallToolResult, error) {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return cs.CallTool(cctx, &mcp.CallToolParams{Name: "mcp_up_mcp_f_echo", Arguments: map[string]any{"text": text}})
	}
	// asked is the URL elicitation a call of cs is answered with.
	asked := func(cs *mcp.ClientSession, who string) mcp.ElicitParams {
		t.Helper()
		var el mcp.ElicitParams
		testutil.Eventually(t, 30*time.Second, who+"'s call to be answered with a URL elicitation", func() bool {
			_, err := echo(cs, who)
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != mcp.CodeURLElicitationRequired {
				return false
			}
			var data struct {
				Elicitations []mcp.ElicitParams `json:"elicitations"`
			}
			if json.Unmarshal(we.Data, &data) != nil || len(data.Elicitations) != 1 {
				return false
			}
			el = data.Elicitations[0]
			return true
		})
		if el.Mode != "url" || !strings.HasPrefix(el.URL, "http://"+aAddr+"/oauth/start/") {
			t.Fatalf("%s was asked %+v", who, el)
		}
		return el
	}
	waitCompleted := func(ch chan string, id, who string) {
		t.Helper()
		for {
			select {
			case got := <-ch:
				if got == id {
					return
				}
			case <-ctx.Done():
				t.Fatalf("%s was not told the consent %s ended", who, id)
			}
		}
	}
	alice, aliceDone := connect("alice", aliceTok)
	mallory, malloryDone := connect("mallory", malloryTok)
	aliceEl, malloryEl := asked(alice, "alice"), asked(mallory, "mallory")

	wantBrowserHeaders := func(what string, resp *http.Response) {
		t.Helper()
		h, referrer := resp.Header, "no-referrer"
		if what == "the confirm page" {
			referrer = "same-origin" // its POST keeps its Origin
		}
		if h.Get("Cache-Control") != "no-store" || h.Get("Referrer-Policy") != referrer || h.Get("X-Frame-Options") != "DENY" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || strings.Contains(h.Get("Content-Security-Policy"), "form-action") {
			t.Errorf("%s (%s): headers %v, want no-store, no-referrer, not framed, no form-action", what, resp.Status, h)
		}
	}
	get := func(hc *http.Client, u string) (*http.Response, string) {
		t.Helper()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(resp.Body)
		resp.Body.Close()
		return resp, body
	}

	// A guessed flow starts nothing.
	if resp, _ := get(http.DefaultClient, "http://"+aAddr+"/oauth/start/"+strings.Repeat("A", 43)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a guessed flow ID: %s, want 404", resp.Status)
	} else {
		wantBrowserHeaders("a guessed flow ID", resp)
	}

	// A third-party page POSTs to alice's start URL from her browser: the
	// browser says the POST is cross-site, and it is refused.
	req, _ := http.NewRequest(http.MethodPost, aliceEl.URL, nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site POST to alice's start URL: %s, want 403", resp.Status)
	}
	if resp, page := get(http.DefaultClient, aliceEl.URL); resp.StatusCode != http.StatusOK || !strings.Contains(page, `method="post"`) {
		t.Fatalf("alice's start page after a cross-site POST: %s, want it still unstarted\n%s", resp.Status, page)
	} else {
		wantBrowserHeaders("the confirm page", resp)
	}

	// browser is a person's browser that confirms at a start URL, signs
	// in at the authorization server as user, and stops at the redirect
	// back to A (back), which the test delivers.
	type browser struct {
		hc              *http.Client
		authorize, back string
	}
	newBrowser := func(user string) *browser {
		jar, _ := cookiejar.New(nil)
		br := &browser{}
		br.hc = &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			switch u := r.URL.String(); {
			case strings.HasPrefix(u, issuer+"/authorize"):
				if r.URL.Path == "/authorize" {
					br.authorize = u
				}
				q := r.URL.Query()
				q.Set("login_hint", user)
				r.URL.RawQuery = q.Encode()
			case strings.HasPrefix(u, redirect):
				br.back = u
				return http.ErrUseLastResponse
			}
			return nil
		}}
		return br
	}
	confirm := func(br *browser, startURL string) {
		t.Helper()
		br.back = ""
		resp, err := br.hc.Post(startURL, "application/x-www-form-urlencoded", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if br.back == "" {
			t.Fatalf("the confirm at %s did not lead back to A's callback (%s)", startURL, resp.Status)
		}
	}
	malloryBr, aliceBr := newBrowser("mallory"), newBrowser("alice")
	confirm(malloryBr, malloryEl.URL)
	au, _ := url.Parse(malloryBr.authorize)
	state := au.Query().Get("state")
	if q := au.Query(); q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || state == "" || q.Get("code_verifier") != "" {
		t.Errorf("the authorization URL %s, want a PKCE S256 challenge and a state", malloryBr.authorize)
	}
	if strings.Contains(malloryEl.URL, state) {
		t.Errorf("the start URL %s carries the state", malloryEl.URL)
	}
	confirm(aliceBr, aliceEl.URL)
	backMallory, backAlice := malloryBr.back, aliceBr.back

	// Login CSRF: mallory's redirect, his code for his account, delivered
	// in alice's browser (which started a flow of her own) links nothing,
	// and spends his flow.
	if resp, body := get(aliceBr.hc, backMallory); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("mallory's redirect in alice's browser: %s %s, want 403", resp.Status, body)
	} else {
		wantBrowserHeaders("a callback at another browser", resp)
	}
	waitCompleted(malloryDone, malloryEl.ElicitationID, "mallory")

	// Alice's redirect completes her flow, once.
	resp, body := get(aliceBr.hc, backAlice)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "given") {
		t.Fatalf("alice's redirect: %s %s", resp.Status, body)
	}
	wantBrowserHeaders("the callback", resp)
	if resp, _ := get(aliceBr.hc, backAlice); resp.StatusCode != http.StatusNotFound {
		t.Errorf("alice's redirect replayed: %s, want 404", resp.Status)
	}
	waitCompleted(aliceDone, aliceEl.ElicitationID, "alice")
	if res, err := echo(alice, "alice-linked"); err != nil || res.IsError {
		t.Fatalf("alice's call after her consent: %v %v", res, err)
	}
	if got := auditedCaller(t, rig.audit, "alice-linked"); got != "oauth:alice" {
		t.Errorf("B audited alice's call as %q, want oauth:alice", got)
	}

	// Mix-up (RFC 9207): mallory is asked again; his redirect comes back
	// with an iss naming another issuer, and the code is never exchanged.
	malloryEl2 := asked(mallory, "mallory")
	if malloryEl2.URL == malloryEl.URL {
		t.Fatalf("mallory's spent flow was offered again: %s", malloryEl2.URL)
	}
	confirm(malloryBr, malloryEl2.URL)
	backMallory2 := malloryBr.back
	if resp, body := get(malloryBr.hc, backMallory2+"&iss="+url.QueryEscape("http://127.0.0.1:1/evil")); resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "not completed") {
		t.Errorf("mallory's redirect with another iss: %s %q, want 502 saying the consent was not completed", resp.Status, body)
	}
	waitCompleted(malloryDone, malloryEl2.ElicitationID, "mallory")
	if el := asked(mallory, "mallory"); el.URL == malloryEl2.URL {
		t.Errorf("mallory's call after a mixed-up redirect was offered its spent flow")
	}
	if got := grantCounts(t, issuer)["authorization_code"]; got != codesBefore+1 {
		t.Errorf("authorization codes exchanged: %d, want %d (alice's only)", got-codesBefore, 1)
	}

	// Nothing of the flows leaks into A's log, status, metrics or audit.
	secrets := map[string]string{"alice's flow ID": path.Base(aliceEl.URL), "mallory's flow ID": path.Base(malloryEl.URL),
		"the refresh token": lastRefreshToken(t, issuer, "sb-code")}
	for name, back := range map[string]string{"mallory's": backMallory, "alice's": backAlice, "mallory's second": backMallory2} {
		u, _ := url.Parse(back)
		secrets[name+" code"], secrets[name+" state"] = u.Query().Get("code"), u.Query().Get("state")
	}
	places := map[string]string{"A's log": a.proc.Stderr()}
	for _, p := range []string{"/status", "/metrics"} {
		resp, err := http.Get("http://" + a.admin + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		places[p] = string(b)
	}
	audit, _ := os.ReadFile(auditFile)
	places["A's audit"] = string(audit)
	for place, text := range places {
		for name, s := range secrets {
			if s == "" {
				t.Errorf("%s: empty", name)
			} else if strings.Contains(text, s) {
				t.Errorf("%s holds %s", place, name)
			}
		}
	}
}
