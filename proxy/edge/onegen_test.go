package edge

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/view"
)

// genWithToken is a generation of the default view whose one token is
// token.
func genWithToken(token string) *dispatch.Gen {
	tokens := &dispatch.Tokens{}
	tokens.Add(token, "auth.tokens[0]", "", true)
	snap := &view.Snapshot{Views: map[string]*view.Spec{"": {}}}
	return dispatch.NewGen(snap, nil, dispatch.Access{Tokens: tokens}, dispatch.Observers{})
}

// TestAuthenticatedInTheGenerationThatServes: a POST is authenticated
// against the generation it holds, and that generation goes on to serve
// it, though a reload replaced it in between (here, one that changed the
// token).
func TestAuthenticatedInTheGenerationThatServes(t *testing.T) {
	first, second := genWithToken("token-one"), genWithToken("token-two")
	e := &Edge{log: hclog.NewNullLogger(), serving: dispatch.NewServing(first)}
	var served *dispatch.Gen
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = dispatch.GenOf(r.Context()) })
	reloaded := false
	reload := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !reloaded {
				e.serving.Swap(second) // after the POST took its generation, before authentication
				reloaded = true
			}
			next.ServeHTTP(w, r)
		})
	}
	h := e.track(reload(e.authenticate(inner)))

	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("Authorization", "Bearer token-one")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || served != first {
		t.Fatalf("POST with the first generation's token: %d, served by %p; want 200 from the first generation %p", rec.Code, served, first)
	}

	// The next POST holds the second generation: the old token is refused.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("a later POST with the replaced token: %d, want 401", rec.Code)
	}
}
