package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// TestConsentError: the error the OAuth client's transport returns for an
// authorization-code server with no usable token (no consent yet, or a
// revoked refresh token) is recognised, and the call's error says to run
// `switchboard auth login NAME` rather than "unreachable".
func TestConsentError(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": srv.URL, "token_endpoint": srv.URL + "/token", "authorization_endpoint": srv.URL + "/authorize",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	h, err := oauth.New(context.Background(), oauth.Params{Key: oauth.Key{Server: "notion"}, URL: srv.URL + "/mcp",
		Config: &oauth.Config{Grant: oauth.GrantAuthorizationCode, ClientID: "app"}})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &oauth.Transport{Base: http.DefaultTransport, Handler: h, Server: "notion",
		Home: func(u *url.URL) bool { return "http://"+u.Host == srv.URL }}}
	_, err = hc.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err == nil || !needsConsent(err.Error()) {
		t.Fatalf("the transport's error is not recognised as needing consent: %v", err)
	}
	if needsConsent("connect: dial tcp 127.0.0.1:1: connection refused") {
		t.Error("a refused connection taken for a missing consent")
	}
	got := (&UnavailableError{Server: "notion", Unreachable: true, Consent: true}).Error()
	if !strings.Contains(got, "run `switchboard auth login notion`") {
		t.Errorf("the call's error: %q", got)
	}
}

// TestTokenRefusal: the error of a request for which no token could be
// had (oauth.ErrNoToken, as text, as errors cross the SDK's transport) is
// recognised and said from ErrNoToken on, so that the call fails with why
// rather than as a lost connection; a consent error keeps its own answer,
// and a refused connection is not taken for it.
func TestTokenRefusal(t *testing.T) {
	err := fmt.Errorf("post initialize: %v", fmt.Errorf("upstream %q: %w: %w", "crm", oauth.ErrNoToken, errors.New("refused: invalid_grant: expired")))
	if got, want := tokenRefusal(err), "no access token could be had: refused: invalid_grant: expired"; got != want {
		t.Errorf("tokenRefusal = %q, want %q", got, want)
	}
	consent := fmt.Errorf("upstream %q: %w: upstream %q %w: run `switchboard auth login crm`", "crm", oauth.ErrNoToken, "crm", oauth.ErrConsent)
	if got := tokenRefusal(consent); got != "" {
		t.Errorf("a consent error taken for a refused token: %q", got)
	}
	if got := tokenRefusal(errors.New("connect: dial tcp 127.0.0.1:1: connection refused")); got != "" {
		t.Errorf("a refused connection taken for a refused token: %q", got)
	}
}

// TestLostSessionTellsConsent: a call that finds the session of a remote
// server lost for want of a consent says so, though the supervisor has not
// taken the loss in yet (its last error is empty here): the call right
// after the one that lost the session gets the consent's answer too, as a
// client asked for a URL elicitation expects.
func TestLostSessionTellsConsent(t *testing.T) {
	for _, c := range []struct {
		cause error
		want  bool
	}{
		{fmt.Errorf("post tools/call: upstream %q: %w: upstream %q %w: run `switchboard auth login crm`", "crm", oauth.ErrNoToken, "crm", oauth.ErrConsent), true},
		{errors.New("post tools/call: connect: connection refused"), false},
	} {
		h := New(Spec{Name: "crm", Transport: TransportHTTP, URL: "http://127.0.0.1:1/mcp", ConnectTimeout: time.Second, CallTimeout: time.Second}, Options{})
		s := &session{lost: make(chan struct{})}
		s.markLost(c.cause)
		h.sess.cur.Store(s)
		_, err := h.calls.live(context.Background())
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Consent != c.want {
			t.Errorf("a session lost to %q: %v (consent %v), want consent %v", c.cause, err, ue != nil && ue.Consent, c.want)
		}
		h.Close(context.Background())
	}
}
