package accesstoken

import (
	"strings"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// FromConfig makes the Verifier of auth.oauth; resolve resolves its
// introspection client secret (a secret reference), given its config
// path, and reports it failed.
func FromConfig(o *config.ProtectedResource, resolve func(path, ref string) (string, bool)) *Verifier {
	opts := Options{
		Resource: o.Resource, Issuer: o.Issuer, JWKSURL: o.JWKSURL, Audience: o.Audience, Scopes: o.Scopes,
		SubjectClaim: o.SubjectClaim, AgentClaim: o.AgentClaim, Agents: o.Agents,
	}
	if in := o.Introspection; in != nil {
		secret, _ := resolve("auth.oauth.introspection.clientSecret", in.ClientSecret)
		opts.Introspection = &Introspection{URL: in.URL, ClientID: in.ClientID, ClientSecret: secret,
			Cache: time.Duration(in.Cache()) * time.Second}
	}
	return New(opts)
}

// ResourceURL is the resource identifier of the endpoint at path (/mcp,
// /agents/ID/mcp; "": switchboard as a whole).
func (v *Verifier) ResourceURL(path string) string {
	return strings.TrimSuffix(v.o.Resource, "/") + path
}

// MetadataURL is where the protected-resource metadata (RFC 9728) of the
// endpoint at path is served.
func (v *Verifier) MetadataURL(path string) string {
	return strings.TrimSuffix(v.o.Resource, "/") + "/.well-known/oauth-protected-resource" + path
}

// SelectsAgents reports whether a claim selects the agent view: a token
// without it then opens the default view only.
func (v *Verifier) SelectsAgents() bool { return v.o.AgentClaim != "" }
