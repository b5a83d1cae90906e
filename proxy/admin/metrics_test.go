package admin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// metricsBackend serves fixed metrics and status for the admin handler.
type metricsBackend struct{ token string }

func (metricsBackend) Readiness() Readiness { return Readiness{Ready: true} }
func (metricsBackend) Status() any          { return map[string]any{"views": []string{"default", "bot"}} }
func (metricsBackend) PublicStatus() any    { return map[string]any{"views": []string{"default"}} }
func (metricsBackend) Metrics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "" {
			w.Header().Set("Content-Encoding", "gzip") // unreadable: must not be asked for
		}
		_, _ = io.WriteString(w, "# HELP switchboard_proxy_sessions Open sessions.\n"+
			"# TYPE switchboard_proxy_sessions gauge\n"+
			`switchboard_proxy_sessions{otel_scope_name="switchboard",view="bot"} 1`+"\n"+
			`switchboard_proxy_sessions{view="default"} 2`+"\n"+
			`switchboard_proxy_sessions{view="we\"ird"} 3`+"\n"+
			`switchboard_upstream_tools{server="preview"} 4`+"\n")
	})
}
func (b metricsBackend) ReloadToken() string       { return b.token }
func (metricsBackend) QueueReload() int64          { return 1 }
func (metricsBackend) Restart(string) int          { return 0 }
func (metricsBackend) Tools(string) ([]Tool, bool) { return nil, false }
func (metricsBackend) Profiles() bool              { return false }

func getBearer(t *testing.T, h http.Handler, path, bearer string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d", path, rec.Code)
	}
	return rec.Body.String()
}

func TestAgentNamesNeedTheAdminToken(t *testing.T) {
	h := Handler(metricsBackend{token: "tok"})
	for _, bearer := range []string{"", "nope"} {
		m := getBearer(t, h, "/metrics", bearer)
		if strings.Contains(m, "bot") || strings.Contains(m, "ird") {
			t.Errorf("metrics with bearer %q name an agent:\n%s", bearer, m)
		}
		for _, keep := range []string{"# TYPE switchboard_proxy_sessions gauge", `{view="default"} 2`, `server="preview"} 4`} {
			if !strings.Contains(m, keep) {
				t.Errorf("metrics with bearer %q lost %q:\n%s", bearer, keep, m)
			}
		}
		if s := getBearer(t, h, "/status", bearer); strings.Contains(s, "bot") {
			t.Errorf("status with bearer %q names an agent: %s", bearer, s)
		}
	}
	if m := getBearer(t, h, "/metrics", "tok"); !strings.Contains(m, `view="bot"`) {
		t.Errorf("metrics with the token lack the agent:\n%s", m)
	}
	if s := getBearer(t, Handler(metricsBackend{}), "/status", ""); !strings.Contains(s, "bot") {
		t.Errorf("status without an admin token configured: %s, want it in full", s)
	}
}
