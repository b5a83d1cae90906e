package admin

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// profileGet makes one GET of the admin handler, with a bearer token if
// one is given.
func profileGet(h http.Handler, path, bearer string) (int, []byte) {
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// TestProfiles: /debug/pprof/ exists only with --admin-pprof, serves
// profiles go tool pprof reads, and asks for the admin token when there is
// one.
func TestProfiles(t *testing.T) {
	gzipped := func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1f, 0x8b}) }
	tests := []struct {
		name     string
		backend  *fakeBackend
		path     string
		bearer   string
		wantCode int
		check    func([]byte) bool // on the body; nil: none
	}{
		{"off by default", &fakeBackend{}, "/debug/pprof/heap", "", http.StatusNotFound, nil},
		{"index", &fakeBackend{profiles: true}, "/debug/pprof/", "", http.StatusOK,
			func(b []byte) bool {
				return bytes.Contains(b, []byte("goroutine\t")) && bytes.Contains(b, []byte("profile?seconds=N"))
			}},
		{"heap, as go tool pprof reads it", &fakeBackend{profiles: true}, "/debug/pprof/heap?gc=1", "", http.StatusOK, gzipped},
		{"goroutines as text", &fakeBackend{profiles: true}, "/debug/pprof/goroutine?debug=1", "", http.StatusOK,
			func(b []byte) bool { return bytes.HasPrefix(b, []byte("goroutine profile: total")) }},
		{"CPU for a second", &fakeBackend{profiles: true}, "/debug/pprof/profile?seconds=1", "", http.StatusOK, gzipped},
		{"seconds out of range", &fakeBackend{profiles: true}, "/debug/pprof/profile?seconds=301", "", http.StatusBadRequest,
			func(b []byte) bool { return strings.Contains(string(b), "from 1 to 300") }},
		{"no such profile", &fakeBackend{profiles: true}, "/debug/pprof/nothing", "", http.StatusNotFound, nil},
		{"token missing", &fakeBackend{profiles: true, token: "t0k"}, "/debug/pprof/heap", "", http.StatusUnauthorized, nil},
		{"token wrong", &fakeBackend{profiles: true, token: "t0k"}, "/debug/pprof/heap", "other", http.StatusUnauthorized, nil},
		{"token given", &fakeBackend{profiles: true, token: "t0k"}, "/debug/pprof/heap", "t0k", http.StatusOK, gzipped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := profileGet(Handler(tt.backend), tt.path, tt.bearer)
			if code != tt.wantCode {
				t.Fatalf("GET %s: %d, want %d (%.200s)", tt.path, code, tt.wantCode, body)
			}
			if tt.check != nil && !tt.check(body) {
				t.Errorf("GET %s: unexpected body %.200q", tt.path, body)
			}
		})
	}
}
