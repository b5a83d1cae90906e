package edge

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/internal/sse"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// genOf is the generation r is served by: the one its POST acquired, or
// for another method the one served now.
func (e *Edge) genOf(r *http.Request) *dispatch.Gen {
	if g := dispatch.GenOf(r.Context()); g != nil {
		return g
	}
	return e.serving.Load()
}

// routes is the downstream mux on listen.
func (e *Edge) routes() http.Handler {
	r := mux.NewRouter()
	streamable := e.streamable
	legacy := sse.New(e.openHTTPStream, e.authorize, e.log)
	// Like the listeners' header timeout, fixed for the process.
	read := e.serving.Load().Snap.Config.ReadTimeout()
	streamable.SetBodyTimeout(read)
	legacy.SetBodyTimeout(read)
	// Order: host check, then authentication (which picks the view), then
	// the MCP transport.
	wrap := func(h http.Handler) http.Handler { return e.track(e.checkHost(e.authenticate(h))) }
	root := wrap(streamable)
	r.Handle("/mcp", root)
	r.Handle("/sse", wrap(legacy))
	r.Handle("/agents/{agent}/mcp", wrap(streamable))
	r.Handle("/agents/{agent}/sse", wrap(legacy))
	const prm = "/.well-known/oauth-protected-resource"
	for _, p := range []string{prm, prm + "/mcp", prm + "/agents/{agent}/mcp"} {
		r.HandleFunc(p, e.resourceMetadata)
	}
	if e.consents != nil {
		// A person's browser, not an MCP client: no bearer token.
		r.Handle(oauth.StartPath+"{flow}", e.checkHost(e.consents.StartHandler()))
		r.Handle(oauth.CallbackPath, e.checkHost(e.consents.CallbackHandler()))
	}
	return http.NewCrossOriginProtection().Handler(exactPath("/mcp", root, r))
}

// exactPath sends requests for exactly path to h and all others to next.
// The router would send them to h too; taking them first spares every
// call on the main endpoint the router's pattern match and the two
// request copies it makes to carry its route and variables.
func exactPath(path string, h, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// track counts downstream POSTs in flight so shutdown can let them finish,
// and refuses new ones once shutdown began; each POST acquires the
// generation that serves it. Long-lived GET streams are not counted: they
// never finish by themselves.
func (e *Edge) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if !e.inflight.enter() {
				http.Error(w, "switchboard is shutting down", http.StatusServiceUnavailable)
				return
			}
			defer e.inflight.leave()
			// One generation serves the request, from its authentication
			// to its answer: it is acquired here and carried in the
			// request's context. A GET stream lasts for hours and holds
			// none (it must not keep a reload's retired servers running).
			held := e.serving.Hold(r.Context())
			defer held.Release()
			r = r.WithContext(held)
		}
		h.ServeHTTP(w, r)
	})
}
