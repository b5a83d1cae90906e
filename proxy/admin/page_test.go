package admin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fakeBackend answers with fixed values; restarts counts Restart calls.
type fakeBackend struct {
	token    string
	restarts []string
	profiles bool // serve --admin-pprof
}

func (f *fakeBackend) Readiness() Readiness  { return Readiness{Ready: true, Waiting: []string{}} }
func (f *fakeBackend) Metrics() http.Handler { return http.NotFoundHandler() }

// PublicStatus is /status without the admin token (on main since issue 37).
func (f *fakeBackend) PublicStatus() any         { return f.Status() }
func (f *fakeBackend) ReloadToken() string       { return f.token }
func (f *fakeBackend) Profiles() bool            { return f.profiles }
func (f *fakeBackend) QueueReload() int64        { return 1 }
func (f *fakeBackend) Restart(server string) int { f.restarts = append(f.restarts, server); return 1 }
func (f *fakeBackend) Status() any {
	return map[string]any{"version": "test", "servers": []map[string]any{{"name": "alpha", "state": "failed",
		"lastError": "secret-free error", "stderrTail": []string{"line one", "line two"}}},
		"views": map[string]any{"default": map[string]any{"tools": 1, "activity": map[string]any{"calls": []int{1, 2}}}}}
}
func (f *fakeBackend) Tools(string) ([]Tool, bool) {
	return []Tool{{Public: "mcp_alpha_echo", Server: "alpha", Original: "echo"}, {Public: "mcp_alpha_rm", Server: "alpha", Original: "rm", Hidden: "policy"}}, true
}

func get(t *testing.T, h http.Handler, path string, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result(), rec.Body.String()
}

func postForm(h http.Handler, path string, form url.Values, origin string, cookie *http.Cookie) *http.Response {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestPageAuth: with an admin token, the page shows health only until
// the token is given; the right token sets an HttpOnly, SameSite=Strict
// cookie that is not the token; the cookie restarts a server from a form
// of the same origin, not from another; every answer carries the CSP.
func TestPageAuth(t *testing.T) {
	b := &fakeBackend{token: "tok-123"}
	h := Handler(b)
	res, body := get(t, h, "/", nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Security-Policy") != pageCSP {
		t.Fatalf("GET / %d, CSP %q", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	if !strings.Contains(body, `action="/login"`) || strings.Contains(body, "alpha") || strings.Contains(body, "line one") {
		t.Fatalf("without the token the page shows more than health:\n%s", body)
	}
	if res := postForm(h, "/login", url.Values{"token": {"wrong"}}, "", nil); res.Header.Get("Location") != "/?login=failed" || len(res.Cookies()) != 0 {
		t.Fatalf("a wrong token: %s, cookies %v", res.Header.Get("Location"), res.Cookies())
	}
	if res := postForm(h, "/login", url.Values{"token": {"tok-123"}}, "http://evil.example", nil); len(res.Cookies()) != 0 {
		t.Fatal("a login posted from another origin set the cookie")
	}
	res = postForm(h, "/login", url.Values{"token": {"tok-123"}}, "http://example.com", nil)
	cookies := res.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("the right token set %d cookies", len(cookies))
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || strings.Contains(c.Value, "tok-123") {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, not the token", c)
	}
	_, body = get(t, h, "/", c)
	for _, want := range []string{`data-server="alpha"`, "line one\nline two", "mcp_alpha_echo", "hidden: policy", `action="/admin/restart/alpha"`} {
		if !strings.Contains(body, want) {
			t.Errorf("signed in, the page lacks %q", want)
		}
	}
	if _, body = get(t, h, "/?q=ECHO", c); strings.Contains(body, "mcp_alpha_rm") || !strings.Contains(body, "mcp_alpha_echo") {
		t.Error("?q=ECHO does not filter the tools")
	}
	if res := postForm(h, "/admin/restart/alpha", nil, "http://evil.example", c); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a restart posted from another origin: %d", res.StatusCode)
	}
	if res := postForm(h, "/admin/restart/alpha", nil, "", &http.Cookie{Name: cookieName, Value: "forged"}); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a restart with a forged cookie: %d", res.StatusCode)
	}
	if len(b.restarts) != 0 {
		t.Fatalf("refused restarts ran: %v", b.restarts)
	}
	res = postForm(h, "/admin/restart/alpha", nil, "http://example.com", c)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/?restarted=alpha" || len(b.restarts) != 1 {
		t.Errorf("a restart from the page: %d %s, restarts %v", res.StatusCode, res.Header.Get("Location"), b.restarts)
	}
	// A new token ends the page's sessions.
	b.token = "tok-456"
	if _, body = get(t, h, "/", c); strings.Contains(body, "alpha") {
		t.Error("the cookie of the old token still opens the page")
	}
	for _, asset := range []string{"/page.js", "/page.css"} {
		res, body := get(t, h, asset, nil)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Security-Policy") != pageCSP || strings.Contains(body, "://") {
			t.Errorf("%s: %d, CSP %q, or an absolute URL in it", asset, res.StatusCode, res.Header.Get("Content-Security-Policy"))
		}
	}
}

// TestPageWithoutToken: with no admin token the page shows what /status
// shows to anyone, and no restart button (the endpoint does not exist).
func TestPageWithoutToken(t *testing.T) {
	h := Handler(&fakeBackend{})
	_, body := get(t, h, "/", nil)
	if !strings.Contains(body, `data-server="alpha"`) || strings.Contains(body, "/admin/restart/") || strings.Contains(body, "/login") {
		t.Errorf("without a token configured:\n%s", body)
	}
	res := postForm(h, "/login", url.Values{"token": {""}}, "", nil)
	if b, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusNotFound {
		t.Errorf("login without a token configured: %d %s", res.StatusCode, b)
	}
}

// perClientBackend has a server with isolation: per-client beside one
// without.
type perClientBackend struct{ fakeBackend }

func (*perClientBackend) Status() any {
	return map[string]any{"version": "test", "servers": []map[string]any{
		{"name": "alpha", "state": "ready", "pid": 10},
		{"name": "beta", "state": "ready", "pid": 11, "instances": 2},
		{"name": "gamma", "state": "ready", "pid": 12, "instances": 0},
	}}
}

// TestPageShowsPerClientInstances: a per-client server's row counts its
// instances, none included; other servers' rows show none.
func TestPageShowsPerClientInstances(t *testing.T) {
	_, body := get(t, Handler(&perClientBackend{}), "/", nil)
	row := func(name string) string {
		_, after, ok := strings.Cut(body, `data-server="`+name+`"`)
		if !ok {
			t.Fatalf("no row for %s:\n%s", name, body)
		}
		before, _, _ := strings.Cut(after, "</tbody>")
		return before
	}
	for name, want := range map[string]string{"beta": `<small class="instances">2 per-client</small>`, "gamma": `<small class="instances">0 per-client</small>`} {
		if r := row(name); !strings.Contains(r, want) {
			t.Errorf("%s: want %q in\n%s", name, want, r)
		}
	}
	if r := row("alpha"); strings.Contains(r, "per-client") {
		t.Errorf("alpha is shared, but its row counts instances:\n%s", r)
	}
}
