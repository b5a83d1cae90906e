package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// protectedUpstream is a remote MCP server that is an OAuth protected
// resource with its own authorization server (client credentials with a
// secret): it records the Authorization header of every /mcp request and
// counts the tokens it issued.
type protectedUpstream struct {
	srv    *httptest.Server
	token  string
	issued atomic.Int32

	mu   sync.Mutex
	seen []string
}

func newProtectedUpstream(t *testing.T, clientID, secret string) *protectedUpstream {
	t.Helper()
	b := make([]byte, 16)
	rand.Read(b)
	u := &protectedUpstream{token: "upstream-access-" + hex.EncodeToString(b)}
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello from the protected server"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux := http.NewServeMux()
	u.srv = httptest.NewServer(mux)
	t.Cleanup(u.srv.Close)
	base := u.srv.URL
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": base, "token_endpoint": base + "/token", "authorization_endpoint": base + "/authorize",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported": []string{"client_credentials"}, "token_endpoint_auth_methods_supported": []string{"client_secret_post"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("client_id") != clientID || r.Form.Get("client_secret") != secret {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]any{"error": "invalid_client"})
			return
		}
		u.issued.Add(1)
		writeJSON(w, map[string]any{"access_token": u.token, "token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		u.mu.Lock()
		u.seen = append(u.seen, got)
		u.mu.Unlock()
		if got != "Bearer "+u.token {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	return u
}

func (u *protectedUpstream) authorizations() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// TestOAuthUpstreamCustody: switchboard obtains the upstream's token
// itself (client credentials) and sends only that upstream; the
// downstream caller's own bearer token never reaches the upstream; the
// token shows nowhere (logs at debug, /status, auth status, the token
// file's bytes); a restart uses the kept token without asking for another.
func TestOAuthUpstreamCustody(t *testing.T) {
	const downstream = "downstream-caller-token-5f1c0e7a9b"
	up := newProtectedUpstream(t, "switchboard-svc", "client-secret-8d2e4c")
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	env := []string{"SWITCHBOARD_TOKEN_DIR=" + tokens, "SVC_SECRET=client-secret-8d2e4c"}
	cfg := map[string]any{
		"auth": map[string]any{"tokens": []string{downstream}},
		"mcpServers": map[string]any{"prot": map[string]any{"url": up.srv.URL + "/mcp", "type": "http",
			"oauth": map[string]any{"grant": "client_credentials", "clientId": "switchboard-svc", "clientSecret": "secret://env/SVC_SECRET"}}},
	}
	call := func(s *sb) {
		t.Helper()
		cs, err := connectWithToken(t, "http://"+s.addr+"/mcp", downstream)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		var name string
		testutil.Eventually(t, 30*time.Second, "the protected server's tool listed", func() bool {
			for n := range listTools(t, cs) {
				if strings.HasSuffix(n, "hello") {
					name = n
				}
			}
			return name != ""
		})
		if got := textOf(mustCall(t, cs, name, map[string]any{})); !strings.Contains(got, "hello from the protected server") {
			t.Fatalf("call through switchboard: %q", got)
		}
	}
	s := startSwitchboardIn(t, dir, dir, cfg, env)
	call(s)

	seen := up.authorizations()
	withToken := 0
	for _, a := range seen {
		if strings.Contains(a, downstream) {
			t.Errorf("the downstream caller's token reached the upstream: %q", a)
		}
		if a == "Bearer "+up.token {
			withToken++
		}
	}
	if withToken == 0 {
		t.Fatalf("no request carried switchboard's own token; the upstream saw %q", seen)
	}
	statusJSON, _ := json.Marshal(s.status(t))
	if strings.Contains(string(statusJSON), up.token) {
		t.Error("/status shows the upstream token")
	}
	sealed, err := os.ReadFile(filepath.Join(tokens, "tokens.enc"))
	if err != nil {
		t.Fatalf("the token file: %v", err)
	}
	if strings.Contains(string(sealed), up.token) || strings.Contains(string(sealed), "upstream-access") {
		t.Error("the token file holds the token in plain text")
	}
	if fi, err := os.Stat(filepath.Join(tokens, "tokens.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the key file: %v, %v", fi, err)
	}
	cmd := exec.Command(switchboard, "auth", "status", "--config", s.config)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "prot") || !strings.Contains(string(out), "yes") || strings.Contains(string(out), up.token) {
		t.Errorf("auth status: %v\n%s", err, out)
	}

	// A restart takes the kept token: no second token request.
	s.proc.stop(5 * time.Second)
	if strings.Contains(s.proc.Stderr(), up.token) {
		t.Error("the log shows the upstream token")
	}
	issued := up.issued.Load()
	dir2 := t.TempDir() // a ready file of its own
	s2 := startSwitchboardIn(t, dir2, dir2, cfg, env)
	call(s2)
	if n := up.issued.Load(); n != issued {
		t.Errorf("after a restart the token was requested again (%d requests, was %d)", n, issued)
	}
	s2.proc.stop(5 * time.Second)
	if strings.Contains(s2.proc.Stderr(), up.token) {
		t.Error("the log shows the upstream token after the restart")
	}
}
