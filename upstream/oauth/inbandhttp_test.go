package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestConsentHandlers: a flow of alice's own token shows whose account is
// linked and starts only on the POST its page makes (a GET, which a link
// can make, never starts it), which redirects the browser to the
// authorization server with a binding cookie; a flow of switchboard's own
// token starts at once. The redirect completes the flow at the starting
// browser only (a victim's browser, without the cookie, is refused), and
// a refusal at the authorization server ends the fetch with a consent
// error.
func TestConsentHandlers(t *testing.T) {
	c := NewConsents(time.Minute)
	start, callback := c.StartHandler(), c.CallbackHandler()
	f, err := c.Open("notion", "alice", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	f.Label = "oauth:<alice>"
	do := serveWith
	get := func(h http.Handler, target, _ string, cookies []*http.Cookie) *httptest.ResponseRecorder {
		return do(h, http.MethodGet, target, cookies)
	}
	w := get(start, "/oauth/start/"+f.ID, "", nil)
	if body := w.Body.String(); w.Code != http.StatusOK || !strings.Contains(body, "oauth:&lt;alice&gt;") || strings.Contains(body, "<alice>") || !strings.Contains(body, "notion") ||
		!strings.Contains(body, `method="post"`) || len(w.Result().Cookies()) != 0 {
		t.Fatalf("the page of alice's flow: %d %v\n%s", w.Code, w.Result().Cookies(), body)
	}
	if w := do(start, http.MethodPut, "/oauth/start/"+f.ID, nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("a PUT to the start URL: %d", w.Code)
	}
	w = do(start, http.MethodPost, "/oauth/start/"+f.ID, nil)
	if w.Code != http.StatusFound || w.Header().Get("Location") != testAuthURL || len(w.Result().Cookies()) != 1 {
		t.Fatalf("alice's confirmed start: %d %q %v", w.Code, w.Header().Get("Location"), w.Result().Cookies())
	}
	if w := get(start, "/oauth/start/"+f.ID, "", nil); w.Code != http.StatusNotFound {
		t.Errorf("the page of a started flow: %d", w.Code)
	}
	own, _ := c.Open("notion", "", "https://as.example/authorize?state=st-own")
	if w := get(start, "/oauth/start/"+own.ID, "", nil); w.Code != http.StatusFound || len(w.Result().Cookies()) != 1 {
		t.Errorf("the start of switchboard's own token: %d", w.Code)
	}
	cookies := w.Result().Cookies()
	if w := get(callback, "/oauth/callback?code=c-1&state=st-4d1e", "", nil); w.Code != http.StatusForbidden {
		t.Errorf("the redirect at a browser that did not start the flow: %d", w.Code)
	}

	g, _ := c.Open("notion", "alice", testAuthURL)
	w = do(start, http.MethodPost, "/oauth/start/"+g.ID, nil)
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
	w = do(start, http.MethodPost, "/oauth/start/"+h.ID, nil)
	if w := get(callback, "/oauth/callback?error=access_denied&state=st-4d1e", "", w.Result().Cookies()); w.Code != http.StatusForbidden {
		t.Errorf("a refused consent: %d", w.Code)
	}
	if _, err := c.Wait(ctx, h); !errors.Is(err, ErrConsent) {
		t.Errorf("a refused consent's fetch: %v", err)
	}
}

// TestConsentRoutesNotCachedNorFramed: every answer of the start and
// callback routes (the confirm page, the redirect to the authorization
// server, the callback's success and its refusals, one reflecting the
// authorization server's error) may not be kept by a cache nor send a
// Referer on (their URLs carry the flow ID, the code and the state),
// nor be framed, and none is sniffed into HTML.
func TestConsentRoutesNotCachedNorFramed(t *testing.T) {
	c := NewConsents(time.Minute)
	start, callback := c.StartHandler(), c.CallbackHandler()
	f, _ := c.Open("notion", "alice", testAuthURL)
	own, _ := c.Open("notion", "", "https://as.example/authorize?state=st-own")
	do := serveWith
	answers := map[string]*httptest.ResponseRecorder{
		"the confirm page":   do(start, http.MethodGet, "/oauth/start/"+f.ID, nil),
		"an unknown flow":    do(start, http.MethodGet, "/oauth/start/guessed", nil),
		"a PUT":              do(start, http.MethodPut, "/oauth/start/"+f.ID, nil),
		"the confirmed POST": do(start, http.MethodPost, "/oauth/start/"+f.ID, nil),
		"an own token start": do(start, http.MethodGet, "/oauth/start/"+own.ID, nil),
	}
	cookies := answers["the confirmed POST"].Result().Cookies()
	answers["the callback at another browser"] = do(callback, http.MethodGet, "/oauth/callback?code=c&state=st-own", nil)
	answers["the callback"] = do(callback, http.MethodGet, "/oauth/callback?code=c&state=st-4d1e", cookies)
	answers["a replayed callback"] = do(callback, http.MethodGet, "/oauth/callback?code=c&state=st-4d1e", cookies)
	answers["a reflected error"] = do(callback, http.MethodGet, "/oauth/callback?error=%3Cscript%3Ealert(1)%3C/script%3E", nil)
	answers["no code"] = do(callback, http.MethodGet, "/oauth/callback?state=st-4d1e", nil)
	for name, w := range answers {
		h, referrer := w.Header(), "no-referrer"
		if name == "the confirm page" {
			referrer = "same-origin" // TestConsentConfirmMayRedirect
		}
		if h.Get("Cache-Control") != "no-store" || h.Get("Referrer-Policy") != referrer || h.Get("X-Frame-Options") != "DENY" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s (%d): headers %v, want no-store, no-referrer, not framed, not sniffed", name, w.Code, h)
		}
	}
	if w := answers["a reflected error"]; !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") || w.Code != http.StatusBadRequest {
		t.Errorf("the authorization server's error reflected as %q (%d)", w.Header().Get("Content-Type"), w.Code)
	}
}

// TestConsentConfirmMayRedirect: the confirm page's policy lets its POST
// be redirected to the authorization server. Browsers apply a policy's
// form-action to the redirects that follow a form's submission, so
// "form-action 'self'" stopped a real browser at the redirect the POST
// answers with, and no caller could link an account. Its referrer policy
// keeps the POST's Origin: under no-referrer a browser sends "Origin:
// null", which the cross-origin check refuses from a browser that sends
// no Sec-Fetch-Site.
func TestConsentConfirmMayRedirect(t *testing.T) {
	c := NewConsents(time.Minute)
	f, _ := c.Open("notion", "alice", testAuthURL)
	w := httptest.NewRecorder()
	c.StartHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/oauth/start/"+f.ID, nil))
	csp := w.Header().Get("Content-Security-Policy")
	for d := range strings.SplitSeq(csp, ";") {
		if name, sources, _ := strings.Cut(strings.TrimSpace(d), " "); name == "form-action" && !strings.Contains(sources, "https://as.example") {
			t.Errorf("the confirm page's policy %q keeps its POST from the authorization server (https://as.example)", csp)
		}
	}
	if rp := w.Header().Get("Referrer-Policy"); rp != "same-origin" {
		t.Errorf("the confirm page's referrer policy %q, want same-origin (its POST keeps its Origin, no other origin gets a Referer)", rp)
	}
	if !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("the confirm page's policy %q lets it load or run anything", csp)
	}
}

// TestConsentCookieSecureBehindTLSProxy: the binding cookie is Secure
// when the callback is https, though switchboard, behind a proxy that
// ends TLS, is reached by plain HTTP: a browser must never send it, nor
// take it from, a plain HTTP answer.
func TestConsentCookieSecureBehindTLSProxy(t *testing.T) {
	c := NewConsents(time.Minute)
	tls, _ := c.Open("notion", "", "https://as.example/authorize?state=st-1&redirect_uri="+url.QueryEscape("https://gateway.example/oauth/callback"))
	plain, _ := c.Open("notion", "", "https://as.example/authorize?state=st-2&redirect_uri="+url.QueryEscape("http://127.0.0.1:8080/oauth/callback"))
	for f, want := range map[*Flow]bool{tls: true, plain: false} {
		w := httptest.NewRecorder()
		c.StartHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://gateway.example/oauth/start/"+f.ID, nil))
		ks := w.Result().Cookies()
		if len(ks) != 1 || ks[0].Secure != want || !ks[0].HttpOnly {
			t.Errorf("the binding cookie of a flow whose callback is %s: %+v, want Secure %v", f.authURL, ks, want)
		}
	}
}

// serveWith serves one request of method for target, with cookies, by h.
func serveWith(h http.Handler, method, target string, cookies []*http.Cookie) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for _, k := range cookies {
		r.AddCookie(k)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
