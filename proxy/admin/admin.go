package admin

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-switchboard/switchboard/proxy/internal/rebind"

	"github.com/gorilla/mux"
)

// Readiness is the answer of /readyz.
type Readiness struct {
	Ready bool `json:"ready"`
	// Waiting lists the servers readiness waits for.
	Waiting []string `json:"waiting"`
	// Stopping is set once shutdown began: the pod leaves the Service.
	Stopping bool `json:"stopping"`
	// AuditFailing is set while audit records cannot be written.
	AuditFailing bool `json:"auditFailing,omitempty"`
}

// Backend is what the admin endpoints read and trigger. Its methods are
// called concurrently.
type Backend interface {
	Readiness() Readiness
	// Status is the value /status encodes; PublicStatus is what it
	// encodes for a request without the admin token when there is one:
	// nothing that names an agent.
	Status() any
	PublicStatus() any
	// Metrics serves /metrics.
	Metrics() http.Handler
	// ReloadToken is the bearer token POST /admin/reload requires; with
	// none the endpoint does not exist.
	ReloadToken() string
	// QueueReload asks for a reload without waiting for it, and returns
	// the config generation it will replace.
	QueueReload() int64
	// Restart restarts the named server (every instance of it) now and
	// reports how many it restarted; 0: no such server.
	Restart(server string) int
	// Tools is the tool table of the view named view, for the status
	// page; false: no such view.
	Tools(view string) ([]Tool, bool)
	// Profiles reports whether /debug/pprof/ serves the runtime's
	// profiles (serve --admin-pprof); false: the path does not exist.
	Profiles() bool
}

// Handler serves the admin endpoints of b.
func Handler(b Backend) http.Handler {
	r := mux.NewRouter()
	r.HandleFunc("/", page(b)).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/page.css", asset("page.css", "text/css; charset=utf-8")).Methods(http.MethodGet)
	r.HandleFunc("/page.js", asset("page.js", "text/javascript; charset=utf-8")).Methods(http.MethodGet)
	r.HandleFunc("/login", login(b)).Methods(http.MethodPost)
	r.HandleFunc("/logout", logout).Methods(http.MethodPost)
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	}).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		rd := b.Readiness()
		w.Header().Set("Content-Type", "application/json")
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rd)
	}).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		st := b.Status
		if !named(r, b.ReloadToken()) {
			st = b.PublicStatus
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st())
	}).Methods(http.MethodGet)
	r.HandleFunc("/admin/reload", func(w http.ResponseWriter, r *http.Request) {
		if !authorized(w, r, b.ReloadToken()) {
			return
		}
		gen := b.QueueReload()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]any{"queued": true, "gen": gen})
	}).Methods(http.MethodPost)
	r.HandleFunc("/admin/restart/{server}", func(w http.ResponseWriter, r *http.Request) {
		if !authorized(w, r, b.ReloadToken()) {
			return
		}
		name := mux.Vars(r)["server"]
		n := b.Restart(name)
		if n == 0 {
			http.Error(w, fmt.Sprintf("no server %q in the running config", name), http.StatusNotFound)
			return
		}
		if fromPage(r) {
			http.Redirect(w, r, "/?restarted="+url.QueryEscape(name), http.StatusSeeOther)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]any{"restarted": n, "server": name})
	}).Methods(http.MethodPost)
	r.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if named(r, b.ReloadToken()) {
			b.Metrics().ServeHTTP(w, r)
			return
		}
		servePublicMetrics(w, r, b.Metrics())
	}).Methods(http.MethodGet)
	if b.Profiles() {
		r.PathPrefix("/debug/pprof/").Handler(profiles(b)).Methods(http.MethodGet)
	}
	// On a loopback listener, a request naming another Host is a web page
	// reaching in by DNS rebinding: refused, as on the MCP listener.
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if rebind.Refused(w, req) {
			return
		}
		r.ServeHTTP(w, req)
	})
}

// authorized checks a request to an admin action against the admin token
// (want): a bearer token, or the status page's cookie on a form posted
// from the page's own origin. Without a token the action does not exist
// (404). It writes the refusal.
func authorized(w http.ResponseWriter, r *http.Request, want string) bool {
	if want == "" {
		http.NotFound(w, r)
		return false
	}
	if fromPage(r) && sameOrigin(r) && cookieOK(r, want) {
		return true
	}
	tok, ok := bearer(r)
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(want)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard-admin"`)
		http.Error(w, "missing or invalid bearer token", http.StatusUnauthorized)
		return false
	}
	return true
}

// named reports whether a request to /status or /metrics may see what
// names agents: it carries the admin token, or none is configured (the
// listener is then trusted as it is: loopback by default).
func named(r *http.Request, want string) bool {
	if want == "" {
		return true
	}
	tok, ok := bearer(r)
	return ok && subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1
}

// fromPage reports whether r is a form the status page posted.
func fromPage(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded")
}

// bearer is the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return "", false
	}
	return f[1], true
}
