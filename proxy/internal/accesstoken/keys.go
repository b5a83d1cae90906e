package accesstoken

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keyRefetch is the least time between two fetches of the key set: a token
// with an unknown key id fetches it again at most this often, so that
// forged key ids cannot make switchboard hammer the identity provider.
const keyRefetch = 30 * time.Second

// maxDocument bounds a discovery document, key set or introspection
// answer.
const maxDocument = 1 << 20

// keySet is the issuer's signing keys, fetched on first use and again on
// an unknown key id (rate limited). A fetch runs outside the lock: tokens
// of known keys never wait for it; those of unknown keys wait for the one
// fetch in flight.
type keySet struct {
	client *http.Client
	issuer string

	mu       sync.Mutex
	jwksURL  string // "" until discovered
	keys     jose.JSONWebKeySet
	fetched  time.Time     // start of the last fetch; zero: never
	inflight chan struct{} // closed when the fetch in flight ends; nil: none
	lastErr  error
}

func newKeySet(c *http.Client, issuer, jwksURL string) *keySet {
	return &keySet{client: c, issuer: issuer, jwksURL: jwksURL}
}

// key is the verification key kid names; an unknown kid fetches the set
// again unless a fetch started less than keyRefetch ago (one in flight is
// waited for).
func (s *keySet) key(ctx context.Context, kid string, now time.Time) (any, error) {
	s.mu.Lock()
	if k, ok := s.find(kid); ok {
		s.mu.Unlock()
		return k, nil
	}
	wait := s.inflight
	if wait == nil && (s.fetched.IsZero() || now.Sub(s.fetched) >= keyRefetch) {
		wait = make(chan struct{})
		s.inflight, s.fetched = wait, now
		jwksURL := s.jwksURL
		go s.fetch(jwksURL, wait)
	}
	s.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, invalid("the issuer's keys are not available")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.find(kid); ok {
		return k, nil
	}
	if s.lastErr != nil {
		return nil, invalid("the issuer's keys are not available")
	}
	return nil, invalid("unknown signing key %q", kid)
}

// fetch reads the key set (discovering its URL first if jwksURL is "")
// and closes done. It runs on its own, not in the context of the request
// that started it: a client that goes away must not leave the keys
// unfetched until the next keyRefetch (the client's timeout bounds it).
func (s *keySet) fetch(jwksURL string, done chan struct{}) {
	ctx := context.Background()
	var set jose.JSONWebKeySet
	err := error(nil)
	if jwksURL == "" {
		jwksURL, err = s.discover(ctx)
	}
	if err == nil {
		err = getJSON(ctx, s.client, jwksURL, &set)
	}
	s.mu.Lock()
	if err == nil {
		s.jwksURL, s.keys = jwksURL, set
	}
	s.lastErr, s.inflight = err, nil
	s.mu.Unlock()
	close(done)
}

// find is the public key of kid ("" : the only signing key); s.mu held.
func (s *keySet) find(kid string) (any, bool) {
	var match []jose.JSONWebKey
	for _, k := range s.keys.Keys {
		if (kid == "" || k.KeyID == kid) && k.Use != "enc" && k.Valid() {
			match = append(match, k)
		}
	}
	if len(match) != 1 {
		return nil, false
	}
	return match[0].Public().Key, true
}

// discover finds jwks_uri in the issuer's OpenID configuration, else its
// RFC 8414 authorization server metadata; the document must name the
// issuer itself.
func (s *keySet) discover(ctx context.Context) (string, error) {
	base := strings.TrimSuffix(s.issuer, "/")
	urls := []string{base + "/.well-known/openid-configuration"}
	if i := strings.Index(base, "://"); i >= 0 {
		if j := strings.IndexByte(base[i+3:], '/'); j >= 0 {
			host, path := base[:i+3+j], base[i+3+j:]
			urls = append(urls, host+"/.well-known/oauth-authorization-server"+path)
		} else {
			urls = append(urls, base+"/.well-known/oauth-authorization-server")
		}
	}
	var errs []string
	for _, u := range urls {
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, s.client, u, &meta); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if strings.TrimSuffix(meta.Issuer, "/") != base {
			return "", fmt.Errorf("%s names issuer %q, not %q", u, meta.Issuer, s.issuer)
		}
		if meta.JWKSURI == "" {
			return "", fmt.Errorf("%s names no jwks_uri", u)
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("no discovery document: %s", strings.Join(errs, "; "))
}

func getJSON(ctx context.Context, c *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
