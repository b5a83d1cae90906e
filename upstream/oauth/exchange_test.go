package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestPerCallerTokenExchange: a token_exchange server's requests made for
// a caller go with the token its access token was exchanged for, each
// caller's own (kept, not exchanged again); a request for no caller goes
// with the client's own client-credentials token; a caller without an
// access token to exchange gets ErrNoCallerToken, and the tokens are kept
// under (server, principal).
func TestPerCallerTokenExchange(t *testing.T) {
	var mu sync.Mutex
	exchanges := map[string]int{}
	as := httptest.NewServer(nil)
	defer as.Close()
	rs := httptest.NewServer(nil)
	defer rs.Close()
	endpoint := rs.URL + "/mcp"
	as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token",
				"authorization_endpoint": as.URL + "/authorize", "response_types_supported": []string{"code"},
				"token_endpoint_auth_methods_supported": []string{"client_secret_post"}, "code_challenge_methods_supported": []string{"S256"}})
		case "/token":
			r.ParseForm()
			id, secret, basic := r.BasicAuth()
			if !basic {
				id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
			}
			if id != "sb" || secret != "s3" {
				http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
				return
			}
			switch r.PostForm.Get("grant_type") {
			case "client_credentials":
				json.NewEncoder(w).Encode(map[string]any{"access_token": "own", "token_type": "Bearer", "expires_in": 3600})
			case "urn:ietf:params:oauth:grant-type:token-exchange":
				sub := r.PostForm.Get("subject_token")
				if r.PostForm.Get("resource") != endpoint || r.PostForm.Get("audience") != endpoint ||
					r.PostForm.Get("subject_token_type") != tokenTypeAccessToken {
					http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
					return
				}
				mu.Lock()
				exchanges[sub]++
				mu.Unlock()
				json.NewEncoder(w).Encode(map[string]any{"access_token": "up-" + sub, "token_type": "Bearer", "expires_in": 3600,
					"issued_token_type": tokenTypeAccessToken})
			default:
				http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			}
		default:
			http.NotFound(w, r)
		}
	})
	rs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": endpoint, "authorization_servers": []string{as.URL}})
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || (tok != "own" && !strings.HasPrefix(tok, "up-")) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.URL+`/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, tok)
	})

	store := NewMemoryStore()
	pc, err := NewPerCaller(context.Background(), Params{Key: Key{Server: "up"}, URL: endpoint, Store: store,
		Config: &Config{Grant: GrantTokenExchange, ClientID: "sb", ClientSecret: "s3"}})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &Transport{Base: http.DefaultTransport, Handler: pc, Home: func(*url.URL) bool { return true }, Server: "up"}}
	get := func(ctx context.Context) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader("{}"))
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	as1 := WithCaller(context.Background(), Caller{Principal: "alice-digest", Token: "alice-at"})
	bs := WithCaller(context.Background(), Caller{Principal: "bob-digest", Token: "bob-at"})
	for _, c := range []struct {
		ctx  context.Context
		want string
	}{{as1, "up-alice-at"}, {bs, "up-bob-at"}, {context.Background(), "own"}, {as1, "up-alice-at"}, {bs, "up-bob-at"}} {
		if got, err := get(c.ctx); err != nil || got != c.want {
			t.Errorf("sent %q (%v), want %q", got, err, c.want)
		}
	}
	mu.Lock()
	if exchanges["alice-at"] != 1 || exchanges["bob-at"] != 1 {
		t.Errorf("exchanges: %v, want one per caller", exchanges)
	}
	mu.Unlock()
	for k, want := range map[Key]string{{"up", "alice-digest"}: "up-alice-at", {"up", "bob-digest"}: "up-bob-at", {"up", ""}: "own"} {
		if e, _ := store.Load(k); e == nil || e.Token.AccessToken != want {
			t.Errorf("store[%v] = %+v, want %q", k, e, want)
		}
	}
	static := WithCaller(context.Background(), Caller{Principal: "static-digest"})
	if _, err := get(static); !errors.Is(err, ErrNoCallerToken) {
		t.Errorf("a caller without an access token: %v, want ErrNoCallerToken", err)
	}
}
