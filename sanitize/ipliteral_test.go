package sanitize

import "testing"

// TestIPLiteral: brackets after "scheme://" mark an IP literal host only
// when what they hold is one (RFC 3986 §3.2.2, RFC 6874); a redaction mark
// or a word in brackets is not, so escapeURI escapes its brackets.
func TestIPLiteral(t *testing.T) {
	for uri, want := range map[string]bool{
		"https://[::1]:80/x":                true,
		"https://u@[2001:db8::7]/":          true,
		"https://[::ffff:192.0.2.1]":        true,
		"https://[fe80::1%25eth0]:8/":       true,
		"https://[fe80::1%25en%2F0]/":       true,
		"https://[v1.fe80::a+b]/":           true,
		"https://[REDACTED]#x":              false,
		"A://[REDACTED]#%5B":                false,
		"a://u@[SECRET]:1":                  false,
		"https://[]/":                       false,
		"https://[fe80::1%25]/":             false,
		"https://[fe80::1%25a b]/":          false,
		"https://[v1.]/":                    false,
		"https://[vz.x]/":                   false,
		"https://[12345]/":                  false,
		"https://h/[::1]":                   false,
		"https://[::1]x/":                   false,
		"https://[::1]:8a/":                 false,
		"https://[fe80::1%25eth0%zz]/":      false,
		"mailto:[::1]":                      false,
		"https://[v1.a/b]/":                 false,
		"https://[::1][::2]/":               false,
		"https://[::1]%5D/":                 false,
		"https://[%5B::1]/":                 false,
		"https://[fe80::1%25eth0]%5Bx%5D/y": false,
	} {
		if got := ipLiteral(uri) != (byteRange{}); got != want {
			t.Errorf("ipLiteral(%q) found one: %v, want %v", uri, got, want)
		}
	}
	if got := escapeURI("A://[REDACTED]#x"); got != "A://%5BREDACTED%5D#x" {
		t.Errorf("escapeURI kept the brackets of a host that is no IP literal: %q", got)
	}
	if got := escapeURI("https://[::1]:80/[x]"); got != "https://[::1]:80/%5Bx%5D" {
		t.Errorf("escapeURI of an IP literal host: %q", got)
	}
}
