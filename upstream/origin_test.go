package upstream

import (
	"net/url"
	"testing"
)

// TestOriginPatternMatch: which origins an egress allow-list entry
// matches (proxy/config parses the written form).
func TestOriginPatternMatch(t *testing.T) {
	for _, tc := range []struct {
		p       OriginPattern
		match   []string
		noMatch []string
	}{
		{OriginPattern{"https", "api.example.com", ""},
			[]string{"https://api.example.com/mcp", "https://API.example.com:443/x?y=1"},
			[]string{"http://api.example.com", "https://api.example.com:8443", "https://example.com", "https://x.api.example.com"}},
		{OriginPattern{"https", "*.example.com", ""},
			[]string{"https://a.example.com", "https://a.b.example.com/mcp"},
			[]string{"https://example.com", "https://evilexample.com", "https://a.example.com.evil.net", "http://a.example.com"}},
		{OriginPattern{"http", "127.0.0.1", "*"},
			[]string{"http://127.0.0.1", "http://127.0.0.1:8080/mcp"},
			[]string{"https://127.0.0.1:8080", "http://127.0.0.2:8080", "http://localhost:8080"}},
		{OriginPattern{"http", "localhost", "8080"},
			[]string{"http://localhost:8080/sse"},
			[]string{"http://localhost", "http://localhost:8081"}},
		{OriginPattern{"https", "*", ""}, []string{"https://anything.net"}, []string{"http://anything.net", "https://anything.net:9443"}},
		{OriginPattern{"https", "*", "*"}, []string{"https://anything.net:9443"}, []string{"http://anything.net"}},
		{OriginPattern{"http", "::1", "*"}, []string{"http://[::1]:3000"}, []string{"http://127.0.0.1:3000"}},
	} {
		for _, raw := range tc.match {
			if u, _ := url.Parse(raw); !tc.p.match(originOf(u)) {
				t.Errorf("%+v does not match %s", tc.p, raw)
			}
		}
		for _, raw := range tc.noMatch {
			if u, _ := url.Parse(raw); tc.p.match(originOf(u)) {
				t.Errorf("%+v matches %s", tc.p, raw)
			}
		}
	}
}
