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

// TestOAuthLinkedAccounts: switchboard (A) with two callers (static
// tokens) and a 2026-07-28 server B (switchboard as a protected resource
// of the real authorization server) whose oauth block is
// authorization_code with perCaller. `auth login` as svc gives the token
// A connects and lists with. Alice's first call (a 2025-11-25 client) is
// answered with a URL elicitation; her browser's start page names her
// (a GET starts nothing), its POST goes to the authorization server, and
// the call made again reaches B as alice. Bob (a 2026-07-28 client) is
// asked for his own consent within his call (MRTR) and reaches B as bob.
// Alice's next call needs no consent; each call B audits names the person
// whose call it was.
func TestOAuthLinkedAccounts(t *testing.T) {
	rig := newConsentRig(t, "sb-code-41b9aa", 0, "svc", "alice", "bob")
	aAddr, redirect, bRes, issuer, auditFile := rig.aAddr, rig.redirect, rig.bRes, rig.issuer, rig.audit

	dir := t.TempDir()
	const aliceTok, bobTok = "alice-static-3f1e0b9c", "bob-static-8d24c6a1"
	env := []string{"SB_CODE=sb-code-41b9aa", "ALICE_TOKEN=" + aliceTok, "BOB_TOKEN=" + bobTok,
		"SWITCHBOARD_TOKEN_DIR=" + filepath.Join(dir, "tokens")}
	cfg := map[string]any{"listen": aAddr,
		"auth": map[string]any{"tokens": []string{"secret://env/ALICE_TOKEN", "secret://env/BOB_TOKEN"}},
		"mcpServers": map[string]any{"up": map[string]any{"url": bRes + "/mcp", "type": "http", "protocol": "2026-07-28",
			"oauth": map[string]any{"grant": "authorization_code", "clientId": "sb-code", "clientSecret": "secret://env/SB_CODE",
				"redirectUri": redirect, "perCaller": true}}}}
	cfgFile := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	authLoginAs(t, cfgFile, env, "svc") // A's own token: connect, list
	run := t.TempDir()
	startSwitchboardIn(t, run, run, cfg, env)

	echo := func(cs *mcp.ClientSession, text string) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_up_mcp_f_echo", Arguments: map[string]any{"text": text}})
	}
	urlCaps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	// browse plays the person at a start URL: the page must name the
	// caller; its POST leads to the authorization server, where user signs
	// in, and back to A's callback.
	browse := func(startURL, caller, user string) error {
		jar, _ := cookiejar.New(nil)
		br := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(r.URL.String(), issuer+"/authorize") {
				q := r.URL.Query()
				q.Set("login_hint", user)
				r.URL.RawQuery = q.Encode()
			}
			return nil
		}}
		resp, err := br.Get(startURL)
		if err != nil {
			return err
		}
		page := readAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, caller) || !strings.Contains(page, `method="post"`) {
			return fmt.Errorf("the start page: %s\n%s", resp.Status, page)
		}
		resp, err = br.Post(startURL, "application/x-www-form-urlencoded", nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the consent ended at %s", resp.Status)
		}
		return nil
	}

	// Alice, 2025-11-25: -32042, her browser, the completion, the call again.
	completed := make(chan string, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{
		Capabilities: urlCaps,
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			completed <- r.Params.ElicitationID
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + aAddr + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{aliceTok}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	var res *mcp.CallToolResult
	testutil.Eventually(t, 30*time.Second, "alice's first call to be answered with a URL elicitation", func() bool {
		res, err = echo(alice, "alice-1")
		var we *jsonrpc.Error
		return errors.As(err, &we) && we.Code == mcp.CodeURLElicitationRequired
	})
	var we *jsonrpc.Error
	errors.As(err, &we)
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(we.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("the error's data: %s (%v)", we.Data, err)
	}
	el := data.Elicitations[0]
	if err := browse(el.URL, "auth.tokens[0]", "alice"); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		select {
		case id := <-completed:
			done = id == el.ElicitationID
		case <-ctx.Done():
			t.Fatal("A did not send notifications/elicitation/complete")
		}
	}
	if res, err = echo(alice, "alice-2"); err != nil || res.IsError {
		t.Fatalf("alice's call after her consent: %q %v", textOf(res), err)
	}

	// Bob, 2026-07-28: asked within his call.
	var asked []string
	bc := mcp.NewClient(&mcp.Implementation{Name: "bob", Version: "1"}, &mcp.ClientOptions{
		Capabilities: urlCaps,
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params.URL)
			if err := browse(r.Params.URL, "auth.tokens[1]", "bob"); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	bob, err := bc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + aAddr + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{bobTok}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if res, err = echo(bob, "bob-1"); err != nil || res.IsError {
		t.Fatalf("bob's call: %q %v (asked %q)", textOf(res), err, asked)
	}
	if len(asked) != 1 {
		t.Errorf("bob was asked %d times, want once", len(asked))
	}

	// Alice again: her own token, no consent.
	if res, err = echo(alice, "alice-3"); err != nil || res.IsError {
		t.Fatalf("alice's next call: %q %v", textOf(res), err)
	}
	for text, want := range map[string]string{"alice-2": "oauth:alice", "bob-1": "oauth:bob", "alice-3": "oauth:alice"} {
		if got := auditedCaller(t, auditFile, text); got != want {
			t.Errorf("B audited the call %q as %q, want %q", text, got, want)
		}
	}
	if got := grantCounts(t, issuer)["authorization_code"]; got != 3 {
		t.Errorf("authorization codes exchanged: %d, want 3 (svc, alice, bob)", got)
	}
}
