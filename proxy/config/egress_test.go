package config

import (
	"strings"
	"testing"
)

// TestParseOrigin: what an egress allow-list entry may be, and the parts
// it becomes.
func TestParseOrigin(t *testing.T) {
	for _, tc := range []struct {
		in, want, wantErr string
	}{
		{in: "https://api.example.com", want: "https api.example.com "},
		{in: "HTTPS://API.Example.com:8443/", want: "https api.example.com 8443"},
		{in: "https://*.example.com", want: "https *.example.com "},
		{in: "http://127.0.0.1:*", want: "http 127.0.0.1 *"},
		{in: "https://*", want: "https * "},
		{in: "http://[::1]:3000", want: "http ::1 3000"},
		{in: "https://[::1]", want: "https ::1 "},
		{in: "api.example.com", wantErr: "scheme"},
		{in: "ftp://x", wantErr: "scheme"},
		{in: "https://x/mcp", wantErr: "without path"},
		{in: "https://user@x", wantErr: "user info"},
		{in: "https://x?q", wantErr: "query"},
		{in: "https://", wantErr: "empty host"},
		{in: "https://x:", wantErr: "empty port"},
		{in: "https://x:99999", wantErr: "port"},
		{in: "https://a.*.com", wantErr: "host"},
		{in: "https://*.", wantErr: "host"},
		{in: "https://[::1", wantErr: "unclosed"},
		{in: "https://[x]", wantErr: "IPv6"},
		{in: "https://::1", wantErr: "host"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			scheme, host, port, err := ParseOrigin(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := scheme + " " + host + " " + port; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzParseOrigin: an allow-list entry either fails with an error or gives
// lower-case parts that hold no path, user info or wildcard but the ones
// allowed, and parsing what it gives back again gives the same.
func FuzzParseOrigin(f *testing.F) {
	for _, s := range []string{"https://*.example.com", "http://127.0.0.1:*", "http://[::1]:8080", "https://a.b", "ftp://x", "http://a/b", "http://*:", "http://[::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scheme, host, port, err := ParseOrigin(s)
		if err != nil {
			return
		}
		if scheme != "http" && scheme != "https" || host == "" || host != strings.ToLower(host) {
			t.Fatalf("ParseOrigin(%q) = %q %q %q", s, scheme, host, port)
		}
		if strings.ContainsAny(host+port, "/?#@") || strings.Contains(strings.TrimPrefix(host, "*."), "*") && host != "*" {
			t.Fatalf("ParseOrigin(%q) let through host %q port %q", s, host, port)
		}
		again := scheme + "://" + host
		if strings.Contains(host, ":") {
			again = scheme + "://[" + host + "]"
		}
		if port != "" {
			again += ":" + port
		}
		s2, h2, p2, err := ParseOrigin(again)
		if err != nil || s2 != scheme || h2 != host || p2 != port {
			t.Fatalf("ParseOrigin(%q) = %q %q %q; again from %q: %q %q %q %v", s, scheme, host, port, again, s2, h2, p2, err)
		}
	})
}
