package httpio

import (
	"mime"
	"testing"
)

// isJSONParsed is IsJSON's answer by parsing alone.
func isJSONParsed(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// TestIsJSON: the value clients send is matched without parsing, and every
// other one as mime.ParseMediaType reads it.
func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                true,
		"application/json; charset=utf-8": true,
		"Application/JSON":                true,
		"application/json;charset=UTF-8":  true,
		"application/json-seq":            false,
		"text/event-stream":               false,
		"application/json; charset":       false,
		"":                                false,
		" application/json":               true,
	} {
		if got := IsJSON(ct); got != want || got != isJSONParsed(ct) {
			t.Errorf("IsJSON(%q) = %v, want %v (parsed: %v)", ct, got, want, isJSONParsed(ct))
		}
	}
}

// FuzzIsJSON: IsJSON answers as parsing the media type does.
func FuzzIsJSON(f *testing.F) {
	for _, s := range []string{"application/json", "application/json; charset=utf-8", "text/plain", "", "application/json;;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		if got, want := IsJSON(ct), isJSONParsed(ct); got != want {
			t.Fatalf("IsJSON(%q) = %v, parsing says %v", ct, got, want)
		}
	})
}
