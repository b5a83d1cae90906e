package oauth

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// TestFileStoreSealed: the file store keeps a token across opens, never
// in plain text, under a 0600 key file; another key does not open it.
func TestFileStoreSealed(t *testing.T) {
	dir := t.TempDir()
	s, err := NewFileStore(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Server: "notion"}
	tok := &oauth2.Token{AccessToken: "access-7c1f9e2d", RefreshToken: "refresh-0b8a4f31", Expiry: time.Now().Add(time.Hour)}
	if err := s.Save(k, &Entry{Token: tok, ClientSecret: "dcr-secret-55aa"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "tokens.enc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"access-7c1f9e2d", "refresh-0b8a4f31", "dcr-secret-55aa", "notion"} {
		if strings.Contains(string(raw), v) {
			t.Errorf("the token file holds %q in plain text", v)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "tokens.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", fi, err)
	}
	again, err := NewFileStore(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := again.Load(k)
	if err != nil || e == nil || e.Token.AccessToken != tok.AccessToken || e.Token.RefreshToken != tok.RefreshToken {
		t.Fatalf("reopened store: %+v, %v", e, err)
	}
	if e, _ := again.Load(Key{Server: "notion", Principal: "alice"}); e != nil {
		t.Error("another principal's key found the single-user token")
	}
	other, err := NewFileStore(dir, "another key")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Load(k); err == nil {
		t.Error("a store with another key opened the file")
	}
	if err := again.Delete(k); err != nil {
		t.Fatal(err)
	}
	if e, _ := again.Load(k); e != nil {
		t.Error("the token is still there after Delete")
	}
}

// fakeHandler hands out token "t<n>" after n Authorize calls.
type fakeHandler struct {
	mu         sync.Mutex
	authorized int
}

func (f *fakeHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.authorized == 0 {
		return nil, nil
	}
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t" + string(rune('0'+f.authorized))}), nil
}

func (f *fakeHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	f.mu.Lock()
	f.authorized++
	f.mu.Unlock()
	return nil
}

// TestTransportAuthorizesOnceAndStaysHome: a request without a token that
// draws a 401 is authorized once and sent again with its body and the new
// token; a request that still draws a 401 is not authorized again; a
// request to another origin carries no token, even one set by its caller.
func TestTransportAuthorizesOnceAndStaysHome(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+string(b))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer t1" || r.URL.Path == "/never" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer home.Close()
	var otherAuth string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherAuth = r.Header.Get("Authorization")
	}))
	defer other.Close()
	hu, _ := url.Parse(home.URL)
	f := &fakeHandler{}
	tr := &Transport{Base: http.DefaultTransport, Handler: f, Server: "s",
		Home: func(u *url.URL) bool { return u.Host == hu.Host }}
	c := &http.Client{Transport: tr}

	resp, err := c.Post(home.URL+"/mcp", "application/json", strings.NewReader(`{"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("after authorizing: %d %q", resp.StatusCode, body)
	}
	mu.Lock()
	want := []string{` {"id":1}`, `Bearer t1 {"id":1}`}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("the server saw %q, want %q", seen, want)
	}
	mu.Unlock()

	resp, err = c.Post(home.URL+"/never", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || f.authorized != 2 {
		t.Errorf("a request refused twice: status %d, %d authorizations (want 401 and 2: one for it)", resp.StatusCode, f.authorized)
	}

	req, _ := http.NewRequest(http.MethodGet, other.URL, nil)
	req.Header.Set("Authorization", "Bearer caller-token")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if otherAuth != "" {
		t.Errorf("another origin got Authorization %q", otherAuth)
	}
}
