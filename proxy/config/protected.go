package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Auth holds downstream bearer tokens that open every view, and the
// identity provider whose access tokens switchboard accepts beside them.
type Auth struct {
	Tokens []string `json:"tokens,omitempty"`
	// OAuth makes /mcp and /agents/{id}/mcp an OAuth protected resource
	// (below).
	OAuth *ProtectedResource `json:"oauth,omitempty"`
}

// ProtectedResource makes switchboard an OAuth 2.1 protected resource (RFC 9728): it
// accepts the access tokens the deployment's identity provider issues for
// it, JWTs checked against the issuer's keys or opaque tokens checked by
// introspection (RFC 7662).
type ProtectedResource struct {
	// Resource is switchboard's public base URL as its clients reach it
	// (https://mcp.example.com): /mcp is the resource Resource+"/mcp",
	// an agent's Resource+"/agents/ID/mcp". Required.
	Resource string `json:"resource"`
	// Issuer is the identity provider's issuer URL, the iss of its tokens
	// and the authorization server named in the resource metadata.
	Issuer string `json:"issuer"`
	// Audience is what a token's aud must hold one of; unset: the
	// resource URL of the endpoint it is shown to.
	Audience []string `json:"audience,omitempty"`
	// JWKSURL is where the issuer's signing keys are; unset: the
	// jwks_uri of its discovery document.
	JWKSURL string `json:"jwksUrl,omitempty"`
	// Introspection checks tokens that are not JWTs with the issuer's
	// RFC 7662 endpoint.
	Introspection *Introspection `json:"introspection,omitempty"`
	// Scopes are the scopes every token must carry.
	Scopes []string `json:"scopes,omitempty"`
	// SubjectClaim names the caller (default "sub").
	SubjectClaim string `json:"subjectClaim,omitempty"`
	// AgentClaim is the claim whose value selects the caller's agent view;
	// unset: every token opens the default view.
	AgentClaim string `json:"agentClaim,omitempty"`
	// Agents maps a value of AgentClaim to an agent id; unset: the value
	// is the agent id.
	Agents map[string]string `json:"agents,omitempty"`
}

// Introspection is an RFC 7662 endpoint and the credentials switchboard
// authenticates to it with (client_secret_basic).
type Introspection struct {
	URL          string `json:"url"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"` // usually a secret:// reference
	// CacheSeconds is how long an answer is reused (default 10; 0: not
	// cached); a token's expiry shortens it.
	CacheSeconds *int `json:"cacheSeconds,omitempty"`
}

// DefaultIntrospectionCache is how long an introspection answer is reused
// when cacheSeconds is unset.
const DefaultIntrospectionCache = 10

// Cache is how long an introspection answer is reused, in seconds.
func (i *Introspection) Cache() int {
	if i == nil || i.CacheSeconds == nil {
		return DefaultIntrospectionCache
	}
	return *i.CacheSeconds
}

// oauth checks auth.oauth at path against the agents it may select.
func (v *validator) protectedResource(path string, o *ProtectedResource, agents *Agents) {
	if o == nil {
		return
	}
	if o.Resource == "" {
		v.add(path+".resource", "required: switchboard's public base URL (e.g. https://mcp.example.com), which tokens are issued for")
	} else {
		v.absoluteURL(path+".resource", o.Resource, true)
	}
	if o.Issuer == "" {
		v.add(path+".issuer", "required: the identity provider's issuer URL")
	} else {
		v.absoluteURL(path+".issuer", o.Issuer, false)
	}
	if o.JWKSURL != "" {
		v.absoluteURL(path+".jwksUrl", o.JWKSURL, false)
	}
	for i, a := range o.Audience {
		if strings.TrimSpace(a) == "" {
			v.add(joinIndex(path+".audience", i), "must not be empty")
		}
	}
	for i, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\n\"") {
			v.add(joinIndex(path+".scopes", i), fmt.Sprintf("%q is not a scope (no spaces or quotes)", s))
		}
	}
	if in := o.Introspection; in != nil {
		p := path + ".introspection"
		if in.URL == "" {
			v.add(p+".url", "required: the issuer's RFC 7662 introspection endpoint")
		} else {
			v.absoluteURL(p+".url", in.URL, false)
		}
		if in.ClientID == "" {
			v.add(p+".clientId", "required: the client switchboard introspects as")
		}
		if in.ClientSecret == "" {
			v.add(p+".clientSecret", "required (usually a secret:// reference)")
		} else {
			v.secretRefs(p+".clientSecret", in.ClientSecret)
		}
		if c := in.CacheSeconds; c != nil && (*c < 0 || *c > 300) {
			v.add(p+".cacheSeconds", "must be between 0 (no cache) and 300 seconds")
		}
	}
	if len(o.Agents) > 0 && o.AgentClaim == "" {
		v.add(path+".agents", "needs agentClaim: the claim whose values it maps")
	}
	known := map[string]bool{}
	if agents != nil {
		for _, ag := range agents.List {
			if ag != nil {
				known[ag.ID] = true
			}
		}
	}
	for _, k := range sortedKeys(o.Agents) {
		if id := o.Agents[k]; !known[id] {
			v.add(joinKey(path+".agents", k), fmt.Sprintf("agent %q is not in agents.list", id))
		}
	}
}

// absoluteURL checks that s is an http(s) URL with a host, without query
// or fragment (and, for a base, without a path beyond "/").
func (v *validator) absoluteURL(path, s string, base bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(path, fmt.Sprintf("want an absolute http or https URL, got %q", s))
		return
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		v.add(path, fmt.Sprintf("%q: no query, fragment or user info", s))
	}
	if base && strings.Trim(u.Path, "/") != "" {
		v.add(path, fmt.Sprintf("%q: the base URL, without a path (the endpoints' paths are added to it)", s))
	}
}
