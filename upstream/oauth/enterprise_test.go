package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestEnterpriseRenewsBeforeExpiry: the enterprise grant's token is
// obtained at the first 401 (ID token → ID-JAG at the identity provider →
// access token by the JWT bearer grant) and, once within 30 s of its
// expiry, obtained again before a request, with the ID token read afresh;
// an ID token the identity provider refuses makes the request fail with
// ErrNoToken and the identity provider's own words.
func TestEnterpriseRenewsBeforeExpiry(t *testing.T) {
	var mu sync.Mutex
	var issued int
	idp := httptest.NewServer(nil)
	defer idp.Close()
	as := httptest.NewServer(nil)
	defer as.Close()
	rs := httptest.NewServer(nil)
	defer rs.Close()
	endpoint := rs.URL + "/mcp"
	meta := func(w http.ResponseWriter, issuer string) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "token_endpoint": issuer + "/token",
			"authorization_endpoint": issuer + "/authorize", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}})
	}
	oauthError := func(w http.ResponseWriter, code, desc string) {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	idp.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			meta(w, idp.URL)
		case "/token":
			r.ParseForm()
			f := r.PostForm
			switch {
			case f.Get("client_id") != "sb-idp" || f.Get("client_secret") != "idp-s3":
				oauthError(w, "invalid_client", "")
			case f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag" || f.Get("audience") != as.URL ||
				f.Get("resource") != endpoint || f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token":
				oauthError(w, "invalid_request", fmt.Sprint(f))
			case !strings.HasPrefix(f.Get("subject_token"), "id-"):
				oauthError(w, "invalid_grant", "the ID token is expired")
			default:
				json.NewEncoder(w).Encode(map[string]any{"access_token": "jag-" + f.Get("subject_token"), "token_type": "N_A",
					"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "expires_in": 300})
			}
		default:
			http.NotFound(w, r)
		}
	})
	as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			meta(w, as.URL)
		case "/token":
			r.ParseForm()
			id, secret, basic := r.BasicAuth()
			if !basic {
				id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
			}
			jag, ok := strings.CutPrefix(r.PostForm.Get("assertion"), "jag-")
			if id != "sb-mcp" || secret != "mcp-s3" || r.PostForm.Get("grant_type") != grantTypeJWTBearer || !ok {
				oauthError(w, "invalid_grant", "")
				return
			}
			mu.Lock()
			issued++
			n := issued
			mu.Unlock()
			// 10 s: within the 30 s before expiry when a token is renewed.
			json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("at%d-%s", n, jag), "token_type": "Bearer", "expires_in": 10})
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
		if !ok || !strings.HasPrefix(tok, "at") {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.URL+`/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, tok)
	})

	idToken := "id-1"
	h, err := New(context.Background(), Params{Key: Key{Server: "crm"}, URL: endpoint,
		Config: &Config{Grant: GrantEnterprise, ClientID: "sb-mcp", ClientSecret: "mcp-s3", IDPIssuer: idp.URL,
			IDPClientID: "sb-idp", IDPClientSecret: "idp-s3", IDToken: "ref:id"},
		Expand: func(_ context.Context, v string) (string, error) {
			if v == "ref:id" {
				mu.Lock()
				defer mu.Unlock()
				return idToken, nil
			}
			return v, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &Transport{Base: http.DefaultTransport, Handler: h, Home: func(*url.URL) bool { return true }, Server: "crm"}}
	get := func() (string, error) {
		resp, err := hc.Post(endpoint, "application/json", strings.NewReader("{}"))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	if got, err := get(); err != nil || !strings.HasSuffix(got, "-id-1") {
		t.Fatalf("the first request went with %q (%v), want a token of ID token id-1", got, err)
	}
	mu.Lock()
	idToken = "id-2"
	mu.Unlock()
	if got, err := get(); err != nil || !strings.HasSuffix(got, "-id-2") {
		t.Fatalf("a request 10 s before the token's expiry went with %q (%v), want a token of ID token id-2: renewed with the ID token read again", got, err)
	}
	mu.Lock()
	idToken = "stale"
	mu.Unlock()
	_, err = get()
	if !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), `refused: invalid_grant: the ID token is expired`) {
		t.Fatalf("a refused ID token: %v, want ErrNoToken with the identity provider's words", err)
	}
}
