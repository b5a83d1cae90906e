package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestConsentHandlers: the start URL redirects alice's browser to the
// authorization server with a binding cookie, and refuses bob; the
// redirect completes the flow at alice's browser only (a victim's
// browser, without the cookie, is refused), and a refusal at the
// authorization server ends the fetch with a consent error.
func TestConsentHandlers(t *testing.T) {
	c := NewConsents(time.Minute)
	who := func(r *http.Request) (string, bool) {
		p := r.Header.Get("X-Test-Principal")
		return p, p != ""
	}
	start, callback := c.StartHandler(who), c.CallbackHandler()
	f, err := c.Open("notion", "alice", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler, target, principal string, cookies []*http.Cookie) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if principal != "" {
			r.Header.Set("X-Test-Principal", principal)
		}
		for _, k := range cookies {
			r.AddCookie(k)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get(start, "/oauth/start/"+f.ID, "", nil); w.Code != http.StatusUnauthorized {
		t.Errorf("start without a caller: %d", w.Code)
	}
	if w := get(start, "/oauth/start/"+f.ID, "bob", nil); w.Code != http.StatusForbidden {
		t.Errorf("bob started alice's flow: %d", w.Code)
	}
	w := get(start, "/oauth/start/"+f.ID, "alice", nil)
	if w.Code != http.StatusFound || w.Header().Get("Location") != testAuthURL || len(w.Result().Cookies()) != 1 {
		t.Fatalf("alice's start: %d %q %v", w.Code, w.Header().Get("Location"), w.Result().Cookies())
	}
	cookies := w.Result().Cookies()
	if w := get(callback, "/oauth/callback?code=c-1&state=st-4d1e", "", nil); w.Code != http.StatusForbidden {
		t.Errorf("the redirect at a browser that did not start the flow: %d", w.Code)
	}

	g, _ := c.Open("notion", "alice", testAuthURL)
	w = get(start, "/oauth/start/"+g.ID, "alice", nil)
	if w := get(callback, "/oauth/callback?code=c-2&state=st-4d1e", "", w.Result().Cookies()); w.Code != http.StatusOK {
		t.Fatalf("the redirect at alice's browser: %d %s", w.Code, w.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, err := c.Wait(ctx, g); err != nil || r.Code != "c-2" {
		t.Fatalf("wait: %+v %v", r, err)
	}
	if w := get(callback, "/oauth/callback?code=c-2&state=st-4d1e", "", cookies); w.Code != http.StatusNotFound {
		t.Errorf("a replayed redirect: %d", w.Code)
	}

	h, _ := c.Open("notion", "alice", testAuthURL)
	w = get(start, "/oauth/start/"+h.ID, "alice", nil)
	if w := get(callback, "/oauth/callback?error=access_denied&state=st-4d1e", "", w.Result().Cookies()); w.Code != http.StatusForbidden {
		t.Errorf("a refused consent: %d", w.Code)
	}
	if _, err := c.Wait(ctx, h); !errors.Is(err, ErrConsent) {
		t.Errorf("a refused consent's fetch: %v", err)
	}
}
