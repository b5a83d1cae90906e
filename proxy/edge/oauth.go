package edge

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/internal/accesstoken"
)

// oauthPrincipal checks tok, an access token of the identity provider,
// for the endpoint r names, and returns its principal; done reports that
// it answered r instead (401, 403 or 404). The principal's Holder is a
// digest of the issuer and subject, so that whatever token a person shows
// their sessions, limits and found tools stay theirs; TokenID names them
// ("oauth:" and the subject) in audit and logs.
func oauthPrincipal(w http.ResponseWriter, r *http.Request, idp *accesstoken.Verifier, tok, pathView string, byPath, unknown bool, exists func(view string) bool) (pr dispatch.Principal, done bool) {
	id, err := idp.Verify(r.Context(), tok, idp.ResourceURL(r.URL.Path))
	if err != nil {
		var te *accesstoken.Error
		if !errors.As(err, &te) {
			te = &accesstoken.Error{Code: "invalid_token", Description: "token not accepted"}
		}
		challenge(w, idp, r.URL.Path, te)
		http.Error(w, te.Description, te.Status())
		return pr, true
	}
	pr = dispatch.Principal{View: pathView, TokenID: "oauth:" + id.Subject, Holder: id.Holder()}
	switch {
	case unknown:
		http.Error(w, "unknown agent", http.StatusNotFound)
		return pr, true
	case !idp.SelectsAgents():
		// No claim selects views: the token opens every one, like a
		// token of auth.tokens.
	case byPath && (!id.HasAgent || id.Agent != pathView):
		http.Error(w, "token not valid for this agent", http.StatusForbidden)
		return pr, true
	case !byPath && id.HasAgent && !exists(id.Agent):
		http.Error(w, "the token's agent is not configured", http.StatusForbidden)
		return pr, true
	case !byPath && id.HasAgent:
		pr.View = id.Agent
	}
	return pr, false
}

// challenge sets WWW-Authenticate for a refused request (RFC 6750 §3):
// with an identity provider it names the protected-resource metadata of
// the endpoint (RFC 9728 §5.1), and te, when the token was refused, its
// error and, for insufficient_scope, the scopes needed.
func challenge(w http.ResponseWriter, idp *accesstoken.Verifier, path string, te *accesstoken.Error) {
	if idp == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
		return
	}
	params := []string{`resource_metadata="` + quoted(idp.MetadataURL(path)) + `"`}
	if te != nil {
		params = append(params, `error="`+te.Code+`"`, `error_description="`+quoted(te.Description)+`"`)
		if len(te.Scopes) > 0 {
			params = append(params, `scope="`+quoted(strings.Join(te.Scopes, " "))+`"`)
		}
	} else if s := idp.Scopes(); len(s) > 0 {
		params = append(params, `scope="`+quoted(strings.Join(s, " "))+`"`)
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
}

// quoted makes s safe in a quoted-string: no quote, backslash or control
// character (a description may hold text from the token).
func quoted(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

// resourceMetadata serves the protected-resource metadata (RFC 9728) of
// the endpoint whose path follows /.well-known/oauth-protected-resource
// (none: switchboard as a whole), from the generation served now; 404
// without auth.oauth. Any agent id gets an answer, so that the metadata
// does not tell which agents exist.
func (e *Edge) resourceMetadata(w http.ResponseWriter, r *http.Request) {
	idp, _ := e.serving.Load().Access.OAuth.(*accesstoken.Verifier)
	if idp == nil {
		http.NotFound(w, r)
		return
	}
	path := ""
	switch ag, byAgent := mux.Vars(r)["agent"]; {
	case byAgent:
		path = "/agents/" + ag + "/mcp"
	case strings.HasSuffix(r.URL.Path, "/mcp"):
		path = "/mcp"
	}
	auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               idp.ResourceURL(path),
		AuthorizationServers:   []string{idp.Issuer()},
		ScopesSupported:        idp.Scopes(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "switchboard",
	}).ServeHTTP(w, r)
}
