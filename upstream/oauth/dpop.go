package oauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
)

// DPoP modes (Config.DPoP), as the config names them.
const (
	DPoPAuto = "auto" // the default: when the authorization server offers ES256, or the resource requires it
	DPoPOn   = "on"   // always; an authorization server that does not offer ES256 fails the flow
	DPoPOff  = "off"  // bearer tokens only
)

// dpopKey is the ES256 key a handler proves possession with (RFC 9449):
// one per server handler, kept in the store's Entry with a token bound to
// it so that a restart can refresh it.
type dpopKey struct {
	priv *ecdsa.PrivateKey
	jwk  map[string]string
}

func newDPoPKey() (*dpopKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return wrapDPoPKey(priv)
}

// parseDPoPKey reads a key marshal wrote (PKCS#8 DER, base64url).
func parseDPoPKey(s string) (*dpopKey, error) {
	der, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("dpop key: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("dpop key: %w", err)
	}
	priv, ok := k.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, errors.New("dpop key: not a P-256 key")
	}
	return wrapDPoPKey(priv)
}

func wrapDPoPKey(priv *ecdsa.PrivateKey) (*dpopKey, error) {
	pub, err := priv.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("dpop key: %w", err)
	}
	b := pub.Bytes() // 0x04 || X || Y
	enc := base64.RawURLEncoding.EncodeToString
	return &dpopKey{priv: priv, jwk: map[string]string{"kty": "EC", "crv": "P-256", "x": enc(b[1:33]), "y": enc(b[33:])}}, nil
}

func (k *dpopKey) marshal() string {
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(der)
}

// proof is a DPoP proof JWT for a request of method to u: a fresh jti,
// htu without query or fragment, nonce when the server gave one, and ath
// when it goes with an access token.
func (k *dpopKey) proof(method string, u *url.URL, token, nonce string) (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	claims := jwt.MapClaims{"jti": hex.EncodeToString(jti), "htm": method, "htu": htu(u), "iat": time.Now().Unix()}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["typ"] = "dpop+jwt"
	t.Header["jwk"] = k.jwk
	return t.SignedString(k.priv)
}

// htu is u without its query and fragment (RFC 9449 §4.2).
func htu(u *url.URL) string {
	v := *u
	v.RawQuery, v.Fragment, v.RawFragment, v.User = "", "", "", nil
	return v.String()
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

// isDPoP reports whether tok is a DPoP-bound token.
func isDPoP(tok *oauth2.Token) bool { return strings.EqualFold(tok.TokenType, "DPoP") }

// nonces keeps the latest DPoP-Nonce each origin sent.
type nonces struct{ m sync.Map }

func (n *nonces) get(u *url.URL) string {
	v, _ := n.m.Load(origin(u))
	s, _ := v.(string)
	return s
}

// seen keeps resp's nonce, if any.
func (n *nonces) seen(u *url.URL, resp *http.Response) {
	if v := resp.Header.Get("DPoP-Nonce"); v != "" {
		n.m.Store(origin(u), v)
	}
}

// dpopTransport is the RoundTripper of an authorization_code handler's
// client: it learns from the metadata the handler fetches through it which
// token endpoints take DPoP, adds a proof to every token request there,
// and sends one again with the nonce of a use_dpop_nonce refusal.
type dpopTransport struct {
	base http.RoundTripper
	mode string
	nonces

	mu        sync.Mutex
	key       *dpopKey
	endpoints map[string]bool // token endpoints (htu) that take DPoP
	required  bool            // the resource requires DPoP-bound tokens
}

func newDPoPTransport(base http.RoundTripper, mode string) (*dpopTransport, error) {
	k, err := newDPoPKey()
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &dpopTransport{base: base, mode: mode, key: k, endpoints: map[string]bool{}}, nil
}

// use takes up the key and token endpoint of a stored entry whose token
// is bound to that key.
func (d *dpopTransport) use(e *Entry) error {
	if e == nil || e.DPoPKey == "" {
		return nil
	}
	k, err := parseDPoPKey(e.DPoPKey)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.key = k
	if u, err := url.Parse(e.TokenURL); err == nil && e.TokenURL != "" {
		d.endpoints[htu(u)] = true
	}
	return nil
}

func (d *dpopTransport) current() *dpopKey {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.key
}

func (d *dpopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/.well-known/") {
		return d.metadata(r)
	}
	d.mu.Lock()
	k, on := d.key, r.Method == http.MethodPost && d.endpoints[htu(r.URL)]
	d.mu.Unlock()
	if !on {
		return d.base.RoundTrip(r)
	}
	resp, err := d.prove(r, k)
	if err == nil {
		d.nonces.seen(r.URL, resp)
	}
	if err != nil || resp.Header.Get("DPoP-Nonce") == "" || resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var te struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &te) != nil || te.Error != "use_dpop_nonce" {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	return d.prove(r, k)
}

// prove sends r (its body afresh) with a proof for the token endpoint.
func (d *dpopTransport) prove(r *http.Request, k *dpopKey) (*http.Response, error) {
	p, err := k.proof(r.Method, r.URL, "", d.nonces.get(r.URL))
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	if r.GetBody != nil {
		if r.Body, err = r.GetBody(); err != nil {
			return nil, err
		}
	}
	r.Header.Set("DPoP", p)
	return d.base.RoundTrip(r)
}

// metadata sends a GET for metadata and reads what it says of DPoP: an
// authorization server's dpop_signing_alg_values_supported (ES256 makes
// its token endpoint take DPoP in auto mode; in on mode, its absence
// fails the flow), a resource's dpop_bound_access_tokens_required.
func (d *dpopTransport) metadata(r *http.Request) (*http.Response, error) {
	resp, err := d.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		TokenEndpoint string   `json:"token_endpoint"`
		DPoPAlgs      []string `json:"dpop_signing_alg_values_supported"`
		DPoPRequired  bool     `json:"dpop_bound_access_tokens_required"`
	}
	if json.Unmarshal(body, &m) != nil {
		return resp, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.DPoPRequired {
		d.required = true
	}
	u, err := url.Parse(m.TokenEndpoint)
	if m.TokenEndpoint == "" || err != nil {
		return resp, nil
	}
	es256 := false
	for _, a := range m.DPoPAlgs {
		es256 = es256 || a == "ES256"
	}
	switch {
	case es256 || d.required:
		d.endpoints[htu(u)] = true
	case d.mode == DPoPOn:
		resp.Body.Close()
		return nil, fmt.Errorf("oauth.dpop is %q but the authorization server's metadata (%s) does not offer ES256 in dpop_signing_alg_values_supported", DPoPOn, htu(r.URL))
	}
	return resp, nil
}
