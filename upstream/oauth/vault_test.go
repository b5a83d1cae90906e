package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// fakeKV is Vault KV v2 as a map of paths: List names what is directly
// under a path, with a trailing slash for a folder. The real Vault is the
// e2e test's (TestOAuthVaultStoreReplicas).
type fakeKV struct {
	mu   sync.Mutex
	m    map[string]map[string]any
	fail error
}

func newFakeKV() *fakeKV { return &fakeKV{m: map[string]map[string]any{}} }

func (f *fakeKV) Get(_ context.Context, p string) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	// As the real client decodes it: JSON, numbers and all.
	b, _ := json.Marshal(f.m[p])
	var out map[string]any
	json.Unmarshal(b, &out)
	return out, nil
}

func (f *fakeKV) Put(_ context.Context, p string, data map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.m[p] = data
	return nil
}

func (f *fakeKV) Delete(_ context.Context, p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, p)
	return nil
}

func (f *fakeKV) List(_ context.Context, p string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.m {
		rest, ok := strings.CutPrefix(k, p+"/")
		if !ok {
			continue
		}
		name, _, dir := strings.Cut(rest, "/")
		if dir {
			name += "/"
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// raw is the data at p as JSON text.
func (f *fakeKV) raw(p string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(f.m[p])
	return string(b)
}

// TestPathSegment: a server's config key (any string) and a principal
// become one path segment each, reversibly, distinctly, and never one a
// path reads otherwise (issue 35).
func TestPathSegment(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"notion", "notion"},
		{"my-server_2", "my-server_2"},
		{"a/b", "a~2Fb"},
		{"..", "~2E~2E"},
		{".", "~2E"},
		{"", "~"},
		{"~", "~7E"},
		{"a b%?#", "a~20b~25~3F~23"},
		{"é", "~C3~A9"},
	} {
		got := PathSegment(tt.in)
		if got != tt.want {
			t.Errorf("PathSegment(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if back, ok := unescapeSegment(got); !ok || back != tt.in {
			t.Errorf("unescapeSegment(%q) = %q, %v; want %q", got, back, ok, tt.in)
		}
	}
	for _, bad := range []string{"~2", "~zz", "~2f", "a.b", "a/b", "~41"} {
		if got, ok := unescapeSegment(bad); ok {
			t.Errorf("unescapeSegment(%q) = %q, ok; PathSegment makes no such name", bad, got)
		}
	}
}

// FuzzPathSegment: every string becomes a segment of the safe alphabet,
// never "." or "..", that unescapes to the same string.
func FuzzPathSegment(f *testing.F) {
	for _, s := range []string{"notion", "a/b", "..", "", "~", "é", "~2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seg := PathSegment(s)
		if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '~')
		}) {
			t.Fatalf("PathSegment(%q) = %q", s, seg)
		}
		if s == "" {
			return
		}
		if back, ok := unescapeSegment(seg); !ok || back != s {
			t.Fatalf("unescapeSegment(PathSegment(%q)) = %q, %v", s, back, ok)
		}
	})
}

// TestVaultStore: entries under the prefix, one secret per key, the
// server's own at PREFIX/SERVER and a caller's below it; Keys finds them
// by listing; sealed with a key (no token in the data, another key does
// not open it), else the entry as plain data; errors name the path and
// never a token.
func TestVaultStore(t *testing.T) {
	tok := &oauth2.Token{AccessToken: "access-v-41e0", RefreshToken: "refresh-v-9d2c", Expiry: time.Now().Add(time.Hour).Round(time.Second)}
	entry := &Entry{Token: tok, ClientSecret: "dcr-secret-v-77", TokenURL: "https://as.example.com/token", Grant: GrantAuthorizationCode}
	own, caller := Key{Server: "team/notion"}, Key{Server: "team/notion", Principal: "sha256:ab.cd"}
	for _, sealed := range []bool{false, true} {
		name, key := "plain", ""
		if sealed {
			name, key = "sealed", "vault-store-key"
		}
		t.Run(name, func(t *testing.T) {
			kv := newFakeKV()
			s, err := NewVaultStore(kv, "secret/switchboard/tokens", key)
			if err != nil {
				t.Fatal(err)
			}
			if e, err := s.Load(own); e != nil || err != nil {
				t.Fatalf("Load before Save = %v, %v; want nil, nil", e, err)
			}
			for _, k := range []Key{own, caller} {
				if err := s.Save(k, entry); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := s.Path(own), "secret/switchboard/tokens/team~2Fnotion"; got != want {
				t.Errorf("Path(own) = %q, want %q", got, want)
			}
			if got, want := s.Path(caller), "secret/switchboard/tokens/team~2Fnotion/sha256~3Aab~2Ecd"; got != want {
				t.Errorf("Path(caller) = %q, want %q", got, want)
			}
			raw := kv.raw(s.Path(own))
			for _, v := range []string{tok.AccessToken, tok.RefreshToken, entry.ClientSecret} {
				if strings.Contains(raw, v) == sealed {
					t.Errorf("sealed=%v, but the data holds %q: %v", sealed, v, strings.Contains(raw, v))
				}
			}
			var data map[string]any
			json.Unmarshal([]byte(raw), &data)
			if data["server"] != own.Server || data["principal"] != "" {
				t.Errorf("data names %v/%v, want %q and \"\"", data["server"], data["principal"], own.Server)
			}
			if _, ok := data["sealed"]; ok != sealed {
				t.Errorf("sealed=%v, data %s", sealed, raw)
			}
			if _, ok := data["entry"]; ok == sealed {
				t.Errorf("sealed=%v, data %s", sealed, raw)
			}
			for _, k := range []Key{own, caller} {
				e, err := s.Load(k)
				if err != nil || e == nil || e.Token.AccessToken != tok.AccessToken || e.Token.RefreshToken != tok.RefreshToken ||
					!e.Token.Expiry.Equal(tok.Expiry) || e.ClientSecret != entry.ClientSecret || e.TokenURL != entry.TokenURL {
					t.Fatalf("Load(%v) = %+v, %v", k, e, err)
				}
			}
			// Something else under the prefix is not a key.
			kv.Put(context.Background(), "secret/switchboard/tokens/not.ours", map[string]any{"x": 1})
			ks, err := s.Keys()
			if err != nil || !slices.Equal(ks, []Key{own, caller}) {
				t.Fatalf("Keys = %v, %v; want %v", ks, err, []Key{own, caller})
			}
			if err := s.Delete(own); err != nil {
				t.Fatal(err)
			}
			if e, err := s.Load(own); e != nil || err != nil {
				t.Errorf("Load after Delete = %v, %v", e, err)
			}
			if ks, _ := s.Keys(); !slices.Equal(ks, []Key{caller}) {
				t.Errorf("Keys after Delete = %v, want %v", ks, []Key{caller})
			}

			// The other mode, or another key, does not read the entry.
			otherKey := "another key"
			if !sealed {
				otherKey = "a key"
			}
			other, _ := NewVaultStore(kv, "secret/switchboard/tokens", otherKey)
			if e, err := other.Load(caller); err == nil || !strings.Contains(err.Error(), s.Path(caller)) {
				t.Errorf("another store read the entry: %v, %v", e, err)
			} else {
				noToken(t, err, tok.AccessToken, tok.RefreshToken)
			}
			if sealed {
				plain, _ := NewVaultStore(kv, "secret/switchboard/tokens", "")
				if _, err := plain.Load(caller); err == nil || !strings.Contains(err.Error(), "sealed with a tokenStoreKey") {
					t.Errorf("a store without key read a sealed entry: %v", err)
				}
			}
		})
	}
}

// TestVaultStoreErrors: a prefix without a path in its mount is refused;
// a failing Vault fails each operation with an error that names the path
// and is ErrStoreUnreachable (a start that meets it is tried again).
func TestVaultStoreErrors(t *testing.T) {
	for _, p := range []string{"secret", "secret/", "/x", "secret//x", "secret/../x"} {
		if _, err := NewVaultStore(newFakeKV(), p, ""); err == nil || !strings.Contains(err.Error(), "vault:"+p) {
			t.Errorf("NewVaultStore(%q) = %v; want an error naming vault:%s", p, err, p)
		}
	}
	if _, err := NewVaultStore(nil, "secret/x", ""); err == nil {
		t.Error("NewVaultStore without a KV succeeded")
	}
	kv := newFakeKV()
	kv.fail = errors.New("vault: read secret/x/s: status 503: Vault is sealed")
	s, _ := NewVaultStore(kv, "secret/x", "")
	_, err := s.Load(Key{Server: "s"})
	if err == nil || !strings.Contains(err.Error(), "secret/x/s") || !errors.Is(err, ErrStoreUnreachable) {
		t.Errorf("Load with Vault failing: %v; want the path, and ErrStoreUnreachable", err)
	}
	if err := s.Save(Key{Server: "s"}, &Entry{Token: &oauth2.Token{AccessToken: "a-1"}}); err == nil || !errors.Is(err, ErrStoreUnreachable) {
		t.Errorf("Save with Vault failing: %v", err)
	}
}

func noToken(t *testing.T, err error, tokens ...string) {
	t.Helper()
	for _, v := range tokens {
		if strings.Contains(err.Error(), v) {
			t.Errorf("error holds a token: %v", err)
		}
	}
}
