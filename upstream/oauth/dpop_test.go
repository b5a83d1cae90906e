package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
)

// checkProof verifies a DPoP proof as a server does (RFC 9449 §4.3):
// typ, alg, a public jwk that verifies the signature, htm, htu, a recent
// iat, the nonce wanted and, with an access token, its ath. It returns
// the proof's jti and the jwk's x.
func checkProof(proof, method, htu, token, nonce string) (jti, x string, err error) {
	var claims jwt.MapClaims
	_, err = jwt.ParseWithClaims(proof, &claims, func(t *jwt.Token) (any, error) {
		if t.Header["typ"] != "dpop+jwt" {
			return nil, fmt.Errorf("typ %v", t.Header["typ"])
		}
		jwk, _ := t.Header["jwk"].(map[string]any)
		if jwk == nil || jwk["kty"] != "EC" || jwk["crv"] != "P-256" || jwk["d"] != nil {
			return nil, fmt.Errorf("jwk %v", t.Header["jwk"])
		}
		xs, _ := jwk["x"].(string)
		ys, _ := jwk["y"].(string)
		xb, err1 := base64.RawURLEncoding.DecodeString(xs)
		yb, err2 := base64.RawURLEncoding.DecodeString(ys)
		if err1 != nil || err2 != nil || len(xb) != 32 || len(yb) != 32 {
			return nil, fmt.Errorf("jwk coordinates %q %q", xs, ys)
		}
		x = xs
		return &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(xb), Y: new(big.Int).SetBytes(yb)}, nil
	}, jwt.WithValidMethods([]string{"ES256"}))
	if err != nil {
		return "", "", err
	}
	jti, _ = claims["jti"].(string)
	iat, _ := claims["iat"].(float64)
	switch {
	case jti == "":
		return "", "", fmt.Errorf("no jti")
	case claims["htm"] != method:
		return "", "", fmt.Errorf("htm %v, want %s", claims["htm"], method)
	case claims["htu"] != htu:
		return "", "", fmt.Errorf("htu %v, want %s", claims["htu"], htu)
	case time.Since(time.Unix(int64(iat), 0)).Abs() > time.Minute:
		return "", "", fmt.Errorf("iat %v", claims["iat"])
	}
	if n, _ := claims["nonce"].(string); n != nonce {
		return "", "", fmt.Errorf("nonce %q, want %q", n, nonce)
	}
	ath, _ := claims["ath"].(string)
	want := ""
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		want = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if ath != want {
		return "", "", fmt.Errorf("ath %q, want %q", ath, want)
	}
	return jti, x, nil
}

// asServer is an authorization server whose metadata offers algs for
// DPoP and whose token endpoint wants a proof with its nonce.
func asServer(t *testing.T, algs []string) (srv *httptest.Server, proofs *[]string) {
	t.Helper()
	var mu sync.Mutex
	proofs = new([]string)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-authorization-server" {
			json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "token_endpoint": srv.URL + "/token",
				"dpop_signing_alg_values_supported": algs})
			return
		}
		p := r.Header.Get("DPoP")
		mu.Lock()
		*proofs = append(*proofs, p)
		mu.Unlock()
		if r.ParseForm(); r.PostForm.Get("grant_type") != "authorization_code" {
			t.Errorf("token request lost its body: %v", r.PostForm)
		}
		if _, _, err := checkProof(p, "POST", srv.URL+"/token", "", "as-nonce-1"); err != nil {
			w.Header().Set("DPoP-Nonce", "as-nonce-1")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"use_dpop_nonce"}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "DPoP"})
	}))
	t.Cleanup(srv.Close)
	return srv, proofs
}

// tokenRequest fetches srv's metadata and then posts a token request to
// it through d.
func tokenRequest(srv *httptest.Server, d *dpopTransport) (*http.Response, error) {
	c := &http.Client{Transport: d}
	resp, err := c.Get(srv.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return c.PostForm(srv.URL+"/token?x=1", url.Values{"grant_type": {"authorization_code"}, "code": {"c"}})
}

// TestDPoPTokenRequest: an authorization server that offers ES256 gets a
// proof of the token endpoint at its token request (typ dpop+jwt, the
// public jwk, htm, htu without the query, no ath), and after a
// use_dpop_nonce refusal the request once more, body and all, with its
// nonce; one that does not gets no proof in auto mode and fails the flow
// in on mode.
func TestDPoPTokenRequest(t *testing.T) {
	srv, proofs := asServer(t, []string{"ES256"})
	d, err := newDPoPTransport(nil, DPoPAuto)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tokenRequest(srv, d)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(*proofs) != 2 {
		t.Fatalf("status %d after %d token requests, want 200 after 2", resp.StatusCode, len(*proofs))
	}
	j1, _, err := checkProof((*proofs)[0], "POST", srv.URL+"/token", "", "")
	if err != nil {
		t.Errorf("first proof: %v", err)
	}
	j2, _, err := checkProof((*proofs)[1], "POST", srv.URL+"/token", "", "as-nonce-1")
	if err != nil || j1 == j2 {
		t.Errorf("retried proof: %v (jti %q, first %q)", err, j2, j1)
	}

	plain, proofs := asServer(t, nil)
	if resp, err := tokenRequest(plain, d); err != nil || len(*proofs) != 1 || (*proofs)[0] != "" {
		t.Errorf("auto, no ES256: %v, proofs %q", err, *proofs)
	} else {
		resp.Body.Close()
	}
	on, err := newDPoPTransport(nil, DPoPOn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokenRequest(plain, on); err == nil || !strings.Contains(err.Error(), "dpop_signing_alg_values_supported") {
		t.Errorf("on, no ES256: %v, want the metadata's lack named", err)
	}
}

// TestDPoPKeyKept: the key a token is bound to goes into the store with
// the token, and a handler made from that entry (a restart) proves with
// the same key at its token endpoint without fetching metadata.
func TestDPoPKeyKept(t *testing.T) {
	srv, proofs := asServer(t, []string{"ES256"})
	st := NewMemoryStore()
	p := Params{Key: Key{Server: "s"}, URL: srv.URL + "/mcp", Config: &Config{Grant: GrantAuthorizationCode}, Store: st}
	h, err := New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	h.keep(&oauth2.Token{AccessToken: "at", TokenType: "DPoP", RefreshToken: "rt"}, &Entry{TokenURL: srv.URL + "/token"})
	e, _ := st.Load(p.Key)
	if e == nil || e.DPoPKey == "" || e.DPoPKey != h.dpop.current().marshal() {
		t.Fatalf("stored entry %+v: want the handler's key", e)
	}
	again, err := New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := again.p.Client.PostForm(srv.URL+"/token", url.Values{"grant_type": {"authorization_code"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, x, err := checkProof((*proofs)[len(*proofs)-1], "POST", srv.URL+"/token", "", "as-nonce-1")
	if err != nil || x != h.dpop.current().jwk["x"] {
		t.Errorf("after a restart: %v, key x %q, want the stored key's %q", err, x, h.dpop.current().jwk["x"])
	}
}

// TestDPoPResourceRequests: a DPoP-bound token goes with the DPoP scheme
// and a fresh proof on every request (ath, htu without the query); a
// use_dpop_nonce refusal is answered by the same request with the nonce,
// not by a new authorization, and the next request carries that nonce
// from the start.
func TestDPoPResourceRequests(t *testing.T) {
	var (
		mu       sync.Mutex
		jtis     = map[string]bool{}
		refusals int
	)
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") != "DPoP at-1" {
			t.Errorf("Authorization %q, want the DPoP scheme", r.Header.Get("Authorization"))
		}
		jti, _, err := checkProof(r.Header.Get("DPoP"), r.Method, "http://"+r.Host+"/mcp", "at-1", "rs-nonce-1")
		if err != nil && strings.Contains(err.Error(), "nonce") {
			refusals++
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
			w.Header().Set("DPoP-Nonce", "rs-nonce-1")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if err != nil {
			t.Errorf("proof: %v", err)
		}
		if jtis[jti] {
			t.Errorf("jti %q used twice", jti)
		}
		jtis[jti] = true
		if b, _ := io.ReadAll(r.Body); string(b) != `{"n":1}` {
			t.Errorf("body %q", b)
		}
	}))
	defer rs.Close()
	st := NewMemoryStore()
	k, err := newDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	st.Save(Key{Server: "s"}, &Entry{Token: &oauth2.Token{AccessToken: "at-1", TokenType: "DPoP", Expiry: time.Now().Add(time.Hour)},
		TokenURL: "http://127.0.0.1:1/token", DPoPKey: k.marshal()})
	h, err := New(context.Background(), Params{Key: Key{Server: "s"}, URL: rs.URL + "/mcp", Config: &Config{Grant: GrantAuthorizationCode}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, Handler: h, Home: func(*url.URL) bool { return true }, Server: "s"}}
	for i := range 3 {
		resp, err := c.Post(rs.URL+"/mcp?q=1", "application/json", strings.NewReader(`{"n":1}`))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("request %d: status %d", i, resp.StatusCode)
		}
	}
	if refusals != 1 || len(jtis) != 3 {
		t.Errorf("%d nonce refusals and %d accepted proofs, want 1 and 3", refusals, len(jtis))
	}
}

// TestDPoPNonceConcurrent: two requests sent at once without the nonce are
// both refused with the same one; the second refusal comes after the
// first request kept the nonce and was sent again with it, and the second
// request too is sent again with it, not taken for a new authorization.
func TestDPoPNonceConcurrent(t *testing.T) {
	var (
		arrived  sync.WaitGroup
		mu       sync.Mutex
		refusals int
		once     sync.Once
		retried  = make(chan struct{})
	)
	arrived.Add(2)
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r) // discovery: a new authorization, which must not start
			return
		}
		if _, _, err := checkProof(r.Header.Get("DPoP"), r.Method, "http://"+r.Host+"/mcp", "at-1", "rs-nonce-1"); err == nil {
			once.Do(func() { close(retried) })
			return
		}
		arrived.Done()
		arrived.Wait() // both requests were sent without the nonce
		mu.Lock()
		refusals++
		second := refusals == 2
		mu.Unlock()
		if second {
			<-retried // the first was refused, kept the nonce and came back with it
		}
		w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
		w.Header().Set("DPoP-Nonce", "rs-nonce-1")
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer rs.Close()
	st := NewMemoryStore()
	k, err := newDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	st.Save(Key{Server: "s"}, &Entry{Token: &oauth2.Token{AccessToken: "at-1", TokenType: "DPoP", Expiry: time.Now().Add(time.Hour)},
		TokenURL: "http://127.0.0.1:1/token", DPoPKey: k.marshal()})
	h, err := New(context.Background(), Params{Key: Key{Server: "s"}, URL: rs.URL + "/mcp", Config: &Config{Grant: GrantAuthorizationCode}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, Handler: h, Home: func(*url.URL) bool { return true }, Server: "s"}}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Post(rs.URL+"/mcp", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("request %d: status %d", i, resp.StatusCode)
			}
		}()
	}
	wg.Wait()
}

// TestDPoPPerCaller: a caller's own DPoP-bound token (linked accounts) is
// sent with the DPoP scheme and a proof of that caller's key, as a
// server's one token is.
func TestDPoPPerCaller(t *testing.T) {
	k, err := newDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "DPoP at-alice" {
			t.Errorf("Authorization %q, want alice's token with the DPoP scheme", r.Header.Get("Authorization"))
		}
		if _, _, err := checkProof(r.Header.Get("DPoP"), r.Method, "http://"+r.Host+"/mcp", "at-alice", ""); err != nil {
			t.Errorf("proof: %v", err)
		}
	}))
	defer rs.Close()
	st := NewMemoryStore()
	st.Save(Key{Server: "s", Principal: "alice"}, &Entry{Token: &oauth2.Token{AccessToken: "at-alice", TokenType: "DPoP", Expiry: time.Now().Add(time.Hour)},
		TokenURL: "http://127.0.0.1:1/token", DPoPKey: k.marshal()})
	h, err := NewPerCaller(context.Background(), Params{Key: Key{Server: "s"}, URL: rs.URL + "/mcp",
		Config: &Config{Grant: GrantAuthorizationCode, PerCaller: true}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, Handler: h, Home: func(*url.URL) bool { return true }, Server: "s"}}
	req, _ := http.NewRequestWithContext(WithCaller(context.Background(), Caller{Principal: "alice"}), http.MethodPost, rs.URL+"/mcp", strings.NewReader(`{}`))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
}
