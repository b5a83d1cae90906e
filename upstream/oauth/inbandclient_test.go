package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// personInner is an authorization_code handler as far as in-band consent
// sees it: its Authorize asks the Client's fetcher for a person's code.
type personInner struct {
	h    *Client
	code chan string
}

func (p *personInner) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

func (p *personInner) Authorize(ctx context.Context, _ *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	r, err := p.h.fetch(ctx, &auth.AuthorizationArgs{URL: testAuthURL})
	if err != nil {
		return err
	}
	p.code <- r.Code
	return nil
}

func inBandClient(t *testing.T) (*Client, *personInner) {
	t.Helper()
	c := &Config{Grant: GrantAuthorizationCode, RedirectURI: "http://127.0.0.1:8080" + CallbackPath}
	h, err := New(context.Background(), Params{Key: Key{Server: "notion"}, URL: "http://mcp.example/mcp", Config: c,
		Store: NewMemoryStore(), Consents: NewConsents(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	in := &personInner{h: h, code: make(chan string, 1)}
	h.inner = in
	return h, in
}

func unauthorized() (*http.Request, *http.Response) {
	req := httptest.NewRequest(http.MethodPost, "http://mcp.example/mcp", nil)
	rec := httptest.NewRecorder()
	rec.WriteHeader(http.StatusUnauthorized)
	return req, rec.Result()
}

// TestInBandConsent: a call that offers to ask its caller gets the start
// URL of one flow, which a second call joins; the code the browser brings
// back completes the authorization, and both callers are told, each with
// its own elicitation ID. A call that offers nothing gets the auth login
// error.
func TestInBandConsent(t *testing.T) {
	h, in := inBandClient(t)
	done := make(chan string, 2)
	a1 := &Asking{Complete: func(id string) { done <- "a1 " + id }}
	a2 := &Asking{Complete: func(id string) { done <- "a2 " + id }}
	req, resp := unauthorized()
	if err := h.Authorize(WithAsking(context.Background(), a1), req, resp); !errors.Is(err, ErrConsentAsked) {
		t.Fatalf("first call: %v, want ErrConsentAsked", err)
	}
	n1 := a1.Need()
	if n1 == nil || !strings.HasPrefix(n1.URL, "http://127.0.0.1:8080"+StartPath) || n1.Server != "notion" || n1.ElicitationID == "" {
		t.Fatalf("first call's need: %+v", n1)
	}
	req, resp = unauthorized()
	if err := h.Authorize(WithAsking(context.Background(), a2), req, resp); !errors.Is(err, ErrConsentAsked) {
		t.Fatalf("second call: %v", err)
	}
	if n2 := a2.Need(); n2 == nil || n2.URL != n1.URL {
		t.Fatalf("second call's need %+v, want the first's flow %s", n2, n1.URL)
	}
	req, resp = unauthorized()
	if err := h.Authorize(context.Background(), req, resp); !errors.Is(err, ErrConsent) || errors.Is(err, ErrConsentAsked) ||
		!strings.Contains(err.Error(), "auth login notion") {
		// While a flow is pending, a call that cannot ask joins nothing.
		t.Errorf("a call offering nothing: %v, want the auth login error", err)
	}
	id := n1.URL[strings.LastIndexByte(n1.URL, '/')+1:]
	authURL, binding, err := h.p.Consents.Start(id, "")
	if err != nil || authURL != testAuthURL {
		t.Fatalf("start: %q %v", authURL, err)
	}
	if _, err := h.p.Consents.Complete("st-4d1e", []string{binding}, "the-code", ""); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if got := <-in.code; got != "the-code" {
		t.Errorf("the authorization got code %q", got)
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case s := <-done:
			got[s] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("callers told: %v", got)
		}
	}
	if !got["a1 "+n1.ElicitationID] || !got["a2 "+n1.ElicitationID] {
		t.Errorf("callers told %v, want both with %s", got, n1.ElicitationID)
	}
	h.mu.Lock()
	pending := h.pending
	h.mu.Unlock()
	if pending != nil {
		t.Error("the authorization stays pending after its flow completed")
	}
}

// TestInBandNeedsSwitchboardsCallback: with a redirect URI that is not
// switchboard's callback, nobody is asked in band: the call gets the
// auth login error.
func TestInBandNeedsSwitchboardsCallback(t *testing.T) {
	c := &Config{Grant: GrantAuthorizationCode} // the loopback default of auth login
	h, err := New(context.Background(), Params{Key: Key{Server: "notion"}, URL: "http://mcp.example/mcp", Config: c,
		Store: NewMemoryStore(), Consents: NewConsents(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	h.inner = &personInner{h: h, code: make(chan string, 1)}
	a := &Asking{}
	req, resp := unauthorized()
	err = h.Authorize(WithAsking(context.Background(), a), req, resp)
	if !errors.Is(err, ErrConsent) || !strings.Contains(err.Error(), "switchboard auth login notion") || a.Need() != nil {
		t.Errorf("got %v (need %+v), want the auth login error and no need", err, a.Need())
	}
}

// TestInBandClose: Close ends an in-band authorization still waiting for
// its person, tells its caller, and waits for it; a call that needs
// consent after Close is not asked.
func TestInBandClose(t *testing.T) {
	h, _ := inBandClient(t)
	told := make(chan string, 1)
	a := &Asking{Complete: func(id string) { told <- id }}
	req, resp := unauthorized()
	if err := h.Authorize(WithAsking(context.Background(), a), req, resp); !errors.Is(err, ErrConsentAsked) {
		t.Fatalf("call: %v, want ErrConsentAsked", err)
	}
	closed := make(chan struct{})
	go func() {
		h.p.Consents.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the authorization waiting for its person")
	}
	select {
	case id := <-told:
		if id != a.Need().ElicitationID {
			t.Errorf("told %q, want %q", id, a.Need().ElicitationID)
		}
	default:
		t.Error("the caller was not told the consent ended")
	}
	b := &Asking{}
	req, resp = unauthorized()
	if err := h.Authorize(WithAsking(context.Background(), b), req, resp); !errors.Is(err, ErrConsent) || b.Need() != nil {
		t.Errorf("a call after Close: %v (need %+v), want a consent error and no asking", err, b.Need())
	}
	h.p.Consents.Close() // idempotent
}

// refusingInner is an authorization_code handler whose person's code is
// then refused (as the SDK refuses an iss naming another issuer, or the
// token endpoint an invalid code).
type refusingInner struct{ h *Client }

func (p *refusingInner) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

func (p *refusingInner) Authorize(ctx context.Context, _ *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	if _, err := p.h.fetch(ctx, &auth.AuthorizationArgs{URL: testAuthURL}); err != nil {
		return err
	}
	return errors.New("authorization response issuer \"https://evil.example\" does not match expected issuer")
}

// TestInBandCallbackSaysOutcome: the callback tells the person whether
// their consent came to a token: one whose code is then refused is not
// answered "given" (it was, before the exchange was waited for), and one
// whose code is exchanged is.
func TestInBandCallbackSaysOutcome(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse bool
		status int
		says   string
	}{
		{name: "refused", refuse: true, status: http.StatusBadGateway, says: "not completed"},
		{name: "exchanged", status: http.StatusOK, says: "given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, in := inBandClient(t)
			if tc.refuse {
				h.inner = &refusingInner{h: h}
			}
			a := &Asking{}
			req, resp := unauthorized()
			if err := h.Authorize(WithAsking(context.Background(), a), req, resp); !errors.Is(err, ErrConsentAsked) {
				t.Fatalf("call: %v, want ErrConsentAsked", err)
			}
			start := httptest.NewRecorder()
			h.p.Consents.StartHandler().ServeHTTP(start, httptest.NewRequest(http.MethodGet, a.Need().URL, nil))
			if start.Code != http.StatusFound {
				t.Fatalf("start: %d", start.Code)
			}
			r := httptest.NewRequest(http.MethodGet, "/oauth/callback?code=c-1&state=st-4d1e", nil)
			for _, k := range start.Result().Cookies() {
				r.AddCookie(k)
			}
			w := httptest.NewRecorder()
			h.p.Consents.CallbackHandler().ServeHTTP(w, r)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.says) || strings.Contains(w.Body.String(), "evil") {
				t.Errorf("the callback: %d %q, want %d saying %q (and not why)", w.Code, w.Body, tc.status, tc.says)
			}
			if !tc.refuse {
				if got := <-in.code; got != "c-1" {
					t.Errorf("the authorization got code %q", got)
				}
			}
			h.p.Consents.Close()
		})
	}
}
