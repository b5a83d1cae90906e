package accesstoken

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxCached bounds the introspection answers kept; when it is full the
// expired ones go, then the table is emptied.
const maxCached = 10000

// introspector asks an RFC 7662 endpoint about opaque tokens.
type introspector struct {
	client *http.Client
	cfg    Introspection

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cached // by the token's digest, never the token
}

type cached struct {
	claims map[string]any // nil: inactive
	until  time.Time
}

func newIntrospector(c *http.Client, cfg Introspection) *introspector {
	return &introspector{client: c, cfg: cfg, cache: map[[sha256.Size]byte]cached{}}
}

// check introspects token (or reuses a recent answer) and checks what the
// answer says against issuer and audience.
func (in *introspector) check(ctx context.Context, token, issuer string, audience []string, now time.Time) (map[string]any, error) {
	d := sha256.Sum256([]byte(token))
	in.mu.Lock()
	c, ok := in.cache[d]
	in.mu.Unlock()
	if !ok || !now.Before(c.until) {
		claims, err := in.ask(ctx, token)
		if err != nil {
			return nil, invalid("the token could not be introspected")
		}
		c = cached{claims: claims, until: now.Add(in.cfg.Cache)}
		if exp, ok := claims["exp"].(float64); ok && claims != nil {
			if t := time.Unix(int64(exp), 0); t.Before(c.until) {
				c.until = t
			}
		}
		if in.cfg.Cache > 0 {
			in.store(d, c, now)
		}
	}
	if c.claims == nil {
		return nil, invalid("the token is not active")
	}
	return checkIntrospected(c.claims, issuer, audience, now)
}

func (in *introspector) store(d [sha256.Size]byte, c cached, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.cache) >= maxCached {
		for k, v := range in.cache {
			if !now.Before(v.until) {
				delete(in.cache, k)
			}
		}
		if len(in.cache) >= maxCached {
			clear(in.cache)
		}
	}
	in.cache[d] = c
}

// ask posts token to the endpoint; an inactive token's claims are nil.
func (in *introspector) ask(ctx context.Context, token string) (map[string]any, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.cfg.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.cfg.ClientID), url.QueryEscape(in.cfg.ClientSecret))
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &Error{Code: "invalid_token", Description: "introspection answered " + resp.Status}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	if err := json.Unmarshal(b, &claims); err != nil {
		return nil, err
	}
	if active, _ := claims["active"].(bool); !active {
		return nil, nil
	}
	return claims, nil
}

// checkIntrospected checks an active answer: its iss (when given) is the
// issuer, its aud (when given) holds the audience, it has not expired.
func checkIntrospected(claims map[string]any, issuer string, audience []string, now time.Time) (map[string]any, error) {
	if iss, ok := claims["iss"].(string); ok && strings.TrimSuffix(iss, "/") != strings.TrimSuffix(issuer, "/") {
		return nil, invalid("issued by %q, not %q", iss, issuer)
	}
	if aud, ok := claims["aud"]; ok && !audienceHolds(aud, audience) {
		return nil, invalid("the token's audience is not this resource")
	}
	if exp, ok := claims["exp"].(float64); ok && now.After(time.Unix(int64(exp), 0).Add(leeway)) {
		return nil, invalid("the token expired")
	}
	return claims, nil
}

func audienceHolds(aud any, want []string) bool {
	var have []string
	switch a := aud.(type) {
	case string:
		have = []string{a}
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok {
				have = append(have, s)
			}
		}
	}
	for _, h := range have {
		for _, w := range want {
			if h == w {
				return true
			}
		}
	}
	return false
}
