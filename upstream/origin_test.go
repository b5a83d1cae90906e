package upstream

import (
	"net/url"
	"strings"
	"testing"
)

// TestOriginPattern: what an egress allow-list entry accepts, and which
// origins it matches.
func TestOriginPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		wantErr string
		match   []string
		noMatch []string
	}{
		{pattern: "https://api.example.com",
			match:   []string{"https://api.example.com/mcp", "https://API.example.com:443/x?y=1"},
			noMatch: []string{"http://api.example.com", "https://api.example.com:8443", "https://example.com", "https://x.api.example.com"}},
		{pattern: "https://*.example.com",
			match:   []string{"https://a.example.com", "https://a.b.example.com/mcp"},
			noMatch: []string{"https://example.com", "https://evilexample.com", "https://a.example.com.evil.net", "http://a.example.com"}},
		{pattern: "http://127.0.0.1:*",
			match:   []string{"http://127.0.0.1", "http://127.0.0.1:8080/mcp"},
			noMatch: []string{"https://127.0.0.1:8080", "http://127.0.0.2:8080", "http://localhost:8080"}},
		{pattern: "http://localhost:8080/",
			match:   []string{"http://localhost:8080/sse"},
			noMatch: []string{"http://localhost", "http://localhost:8081"}},
		{pattern: "https://*", match: []string{"https://anything.net"}, noMatch: []string{"http://anything.net", "https://anything.net:9443"}},
		{pattern: "https://*:*", match: []string{"https://anything.net:9443"}, noMatch: []string{"http://anything.net"}},
		{pattern: "http://[::1]:*", match: []string{"http://[::1]:3000"}, noMatch: []string{"http://127.0.0.1:3000"}},
		{pattern: "https://[::1]", match: []string{"https://[::1]/x"}, noMatch: []string{"https://[::1]:8443"}},
		{pattern: "api.example.com", wantErr: "scheme"},
		{pattern: "ftp://x", wantErr: "scheme"},
		{pattern: "https://x/mcp", wantErr: "without path"},
		{pattern: "https://user@x", wantErr: "user info"},
		{pattern: "https://x?q", wantErr: "query"},
		{pattern: "https://", wantErr: "empty host"},
		{pattern: "https://x:", wantErr: "empty port"},
		{pattern: "https://x:99999", wantErr: "port"},
		{pattern: "https://a.*.com", wantErr: "host"},
		{pattern: "https://*.", wantErr: "host"},
		{pattern: "https://[::1", wantErr: "unclosed"},
		{pattern: "https://[x]", wantErr: "IPv6"},
		{pattern: "https://::1", wantErr: "host"},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			p, err := ParseOriginPattern(tc.pattern)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range tc.match {
				if u, _ := url.Parse(raw); !p.match(originOf(u)) {
					t.Errorf("%s does not match", raw)
				}
			}
			for _, raw := range tc.noMatch {
				if u, _ := url.Parse(raw); p.match(originOf(u)) {
					t.Errorf("%s matches", raw)
				}
			}
		})
	}
}
