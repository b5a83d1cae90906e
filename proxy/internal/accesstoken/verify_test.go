package accesstoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

// idp is an issuer in a test: a key set that can rotate and an
// introspection endpoint, counting the requests of each.
type idp struct {
	srv              *httptest.Server
	mu               sync.Mutex
	keys             []jose.JSONWebKey
	keyFetches, asks atomic.Int32
	active           map[string]map[string]any
	block            chan struct{} // when set, key fetches wait for it
}

func newIDP(t *testing.T) *idp {
	p := &idp{active: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.srv.URL, "jwks_uri": p.srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		p.keyFetches.Add(1)
		p.mu.Lock()
		block := p.block
		p.mu.Unlock()
		if block != nil {
			<-block
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: p.keys})
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		p.asks.Add(1)
		if id, secret, _ := r.BasicAuth(); id != "sb" || secret != "pw" {
			http.Error(w, "who", http.StatusUnauthorized)
			return
		}
		p.mu.Lock()
		claims, ok := p.active[r.PostFormValue("token")]
		p.mu.Unlock()
		if !ok {
			claims = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(claims)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

// key makes a signing key kid and publishes its public half.
func (p *idp) key(t *testing.T, kid string) jose.Signer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.keys = append(p.keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
	p.mu.Unlock()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sign(t *testing.T, s jose.Signer, claims map[string]any) string {
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const res = "https://sb.test/mcp"

func (p *idp) claims(extra map[string]any) map[string]any {
	c := map[string]any{"iss": p.srv.URL, "aud": res, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "scope": "mcp:tools other"}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestKeysFetchedOnceAndOnUnknownKidRateLimited: the key set is fetched on
// the first token and kept; a token signed with an unknown key id fetches
// it again at most once per keyRefetch, so a rotated key is found and a
// flood of forged key ids costs the issuer one request.
func TestKeysFetchedOnceAndOnUnknownKidRateLimited(t *testing.T) {
	p := newIDP(t)
	s1 := p.key(t, "k1")
	now := time.Now()
	v := New(Options{Resource: "https://sb.test", Issuer: p.srv.URL})
	v.now = func() time.Time { return now }
	ctx := context.Background()
	for range 5 {
		if _, err := v.Verify(ctx, sign(t, s1, p.claims(nil)), res); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.keyFetches.Load(); n != 1 {
		t.Fatalf("5 tokens of one key: %d key fetches, want 1", n)
	}
	now = now.Add(keyRefetch)
	s2 := p.key(t, "k2") // rotation, a while after the first fetch
	for range 5 {
		if _, err := v.Verify(ctx, sign(t, s2, p.claims(nil)), res); err != nil {
			t.Fatalf("a token of the rotated key: %v", err)
		}
	}
	forged := p.key(t, "k3")
	p.mu.Lock()
	p.keys = p.keys[:2] // k3 is not published
	p.mu.Unlock()
	for range 20 {
		if _, err := v.Verify(ctx, sign(t, forged, p.claims(nil)), res); code(err) != "invalid_token" {
			t.Fatalf("unknown key id: %v", err)
		}
	}
	if n := p.keyFetches.Load(); n != 2 {
		t.Errorf("after a rotation and 20 unknown key ids within %s of it: %d key fetches, want 2", keyRefetch, n)
	}
	now = now.Add(keyRefetch)
	_, _ = v.Verify(ctx, sign(t, forged, p.claims(nil)), res)
	if n := p.keyFetches.Load(); n != 3 {
		t.Errorf("an unknown key id %s later: %d key fetches, want 3", keyRefetch, n)
	}
}

// TestVerifyClaims: what a signed token must hold.
func TestVerifyClaims(t *testing.T) {
	p := newIDP(t)
	s := p.key(t, "k1")
	v := New(Options{Resource: "https://sb.test", Issuer: p.srv.URL, Scopes: []string{"mcp:tools"},
		AgentClaim: "team", Agents: map[string]string{"red": "alpha"}})
	hs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	for _, c := range []struct {
		what  string
		token string
		want  string // error code, "" for accepted
	}{
		{"good", sign(t, s, p.claims(nil)), ""},
		{"the base URL as audience", sign(t, s, p.claims(map[string]any{"aud": "https://sb.test"})), ""},
		{"scp as a list", sign(t, s, p.claims(map[string]any{"scope": nil, "scp": []string{"mcp:tools"}})), ""},
		{"another resource", sign(t, s, p.claims(map[string]any{"aud": "https://sb.test/agents/x/mcp"})), "invalid_token"},
		{"no exp", sign(t, s, p.claims(map[string]any{"exp": nil})), "invalid_token"},
		{"not yet valid", sign(t, s, p.claims(map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})), "invalid_token"},
		{"no subject", sign(t, s, p.claims(map[string]any{"sub": nil})), "invalid_token"},
		{"no scope", sign(t, s, p.claims(map[string]any{"scope": "other"})), "insufficient_scope"},
		{"an unmapped team", sign(t, s, p.claims(map[string]any{"team": "blue"})), "invalid_token"},
		{"symmetric algorithm", sign(t, hs, p.claims(nil)), "invalid_token"},
	} {
		id, err := v.Verify(context.Background(), c.token, res)
		if code(err) != c.want || (c.want == "" && err != nil) {
			t.Errorf("%s: %v, want %q", c.what, err, c.want)
		}
		if c.want == "" && (id.Subject != "alice" || id.HasAgent) {
			t.Errorf("%s: %+v", c.what, id)
		}
	}
	id, err := v.Verify(context.Background(), sign(t, s, p.claims(map[string]any{"team": "red"})), res)
	if err != nil || !id.HasAgent || id.Agent != "alpha" {
		t.Errorf("team red: %+v %v, want agent alpha", id, err)
	}
	other := Identity{Issuer: "https://other.test", Subject: "alice"}
	if id.Holder() == other.Holder() {
		t.Error("the same subject of two issuers is one holder")
	}
}

// TestIntrospectionCached: an answer is reused for the cache time, then
// asked again, so a revoked token is refused once it passed.
func TestIntrospectionCached(t *testing.T) {
	p := newIDP(t)
	p.active["opaque-1"] = map[string]any{"active": true, "sub": "dave", "iss": p.srv.URL, "aud": []string{res}, "scope": "mcp:tools",
		"exp": time.Now().Add(time.Hour).Unix()}
	p.active["other-aud"] = map[string]any{"active": true, "sub": "dave", "aud": "https://elsewhere.test"}
	now := time.Now()
	v := New(Options{Resource: "https://sb.test", Issuer: p.srv.URL,
		Introspection: &Introspection{URL: p.srv.URL + "/introspect", ClientID: "sb", ClientSecret: "pw", Cache: 10 * time.Second}})
	v.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		if id, err := v.Verify(ctx, "opaque-1", res); err != nil || id.Subject != "dave" {
			t.Fatalf("active token: %+v %v", id, err)
		}
	}
	if n := p.asks.Load(); n != 1 {
		t.Errorf("3 uses within the cache time: %d introspections, want 1", n)
	}
	p.mu.Lock()
	delete(p.active, "opaque-1") // revoked
	p.mu.Unlock()
	now = now.Add(10 * time.Second)
	if _, err := v.Verify(ctx, "opaque-1", res); code(err) != "invalid_token" {
		t.Errorf("revoked, after the cache time: %v, want invalid_token", err)
	}
	if _, err := v.Verify(ctx, "other-aud", res); code(err) != "invalid_token" {
		t.Errorf("another audience: %v, want invalid_token", err)
	}
	if _, err := v.Verify(ctx, "never-issued", res); code(err) != "invalid_token" {
		t.Errorf("unknown token: %v", err)
	}
}

// TestKnownKeyNeverWaitsForFetch: while a fetch for an unknown key id is
// in flight (the issuer is slow), tokens of known keys are checked at once.
func TestKnownKeyNeverWaitsForFetch(t *testing.T) {
	p := newIDP(t)
	s1 := p.key(t, "k1")
	now := time.Now()
	var mu sync.Mutex
	v := New(Options{Resource: "https://sb.test", Issuer: p.srv.URL})
	v.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(t, s1, p.claims(nil)), res); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(keyRefetch)
	mu.Unlock()
	block := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(block) })
	defer unblock() // a failure before the end must not leave the issuer blocked
	p.mu.Lock()
	p.block = block
	p.mu.Unlock()
	unknown := p.key(t, "k9")
	slow := make(chan error, 1)
	go func() {
		_, err := v.Verify(ctx, sign(t, unknown, p.claims(nil)), res)
		slow <- err
	}()
	testutil.Eventually(t, 20*time.Second, "the fetch for the unknown key", func() bool { return p.keyFetches.Load() >= 2 })
	done := make(chan error, 1)
	go func() {
		_, err := v.Verify(ctx, sign(t, s1, p.claims(nil)), res)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("known key during a fetch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("a token of a known key waited for the key fetch in flight")
	}
	unblock()
	if err := <-slow; err != nil {
		t.Errorf("the key the fetch brought: %v", err)
	}
}
