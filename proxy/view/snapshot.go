package view

import (
	"cmp"
	"sort"

	"github.com/mcp-switchboard/switchboard/policy"
	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// Snapshot is one immutable config generation: what every request of that
// generation sees. Handles are shared with other generations while their
// fingerprint is unchanged.
type Snapshot struct {
	Gen    int64
	Digest string
	Config *config.Config

	// Handles holds every running upstream by handle key (the server key,
	// or key@agent for an agent's override of a default server).
	Handles map[string]*upstream.Handle
	// Views holds the default view under "" and each agent under its id.
	Views map[string]*Spec

	Sanitize sanitize.Options
	PinMode  string
	// Limiters holds each view's rate limiter (nil: unlimited), keyed per
	// token or session within the view.
	Limiters map[string]*policy.Limiter
}

// Spec is what one downstream view exposes.
type Spec struct {
	ID      string
	Servers []*ServerEntry // sorted by key
	Tools   policy.Chain   // global and agent layers for tools
	Prompts policy.Chain
	// Discovery is the view's (the agent's own, else the top level's);
	// nil lists every tool. AlwaysVisible is its alwaysVisible compiled,
	// nil when it has none.
	Discovery     *config.Discovery
	AlwaysVisible *policy.Layer
	// ReadOnly lists only the tools believed read-only (annotations.go).
	ReadOnly bool
}

// ServerEntry is one server as a view sees it.
type ServerEntry struct {
	Key       string
	Prefix    string
	HandleKey string
	Handle    *upstream.Handle
	Tools     *policy.Layer
	Prompts   *policy.Layer
	Wrap      bool
	Bare      bool // namespace: false
	PerClient bool // isolation: per-client
	Resources bool
	Filter    []string
	// ListPrompts is listPrompts: false hides the server's prompts (they
	// are not listed either, see upstream.Spec.SkipPrompts).
	ListPrompts bool
	// TrustAnnotations and Annotations are the server's (annotations.go).
	TrustAnnotations bool
	Annotations      map[string]*config.ToolAnnotations
}

// serverSpec turns one config entry into the upstream spec it runs.
func serverSpec(key string, s *config.Server) upstream.Spec {
	var failures *int
	if s.Breaker != nil {
		failures = s.Breaker.Failures
	}
	backoff, backoffMax := s.RestartBackoff.Delays()
	return upstream.Spec{
		BackoffInitial:  backoff,
		BackoffMax:      backoffMax,
		Name:            key,
		Transport:       specTransport(s),
		Command:         s.Command,
		Args:            s.Args,
		Env:             s.Env,
		Dir:             s.Cwd,
		URL:             s.URL,
		Headers:         s.Headers,
		FollowRedirects: s.FollowRedirects,
		Protocol:        s.Protocol,
		ConnectTimeout:  s.ConnectTimeout(),
		CallTimeout:     s.ToolTimeout(),
		RestartOnCrash:  boolOr(s.RestartOnCrash, true),
		MaxRestarts:     intOr(s.MaxRestarts, config.DefaultMaxRestarts),
		Lazy:            s.Lazy,
		LazyList:        s.LazyList,
		IdleTimeout:     s.IdleTimeout(),
		BreakerFailures: intOr(failures, config.DefaultBreakerFailures),
		BreakerOpen:     s.Breaker.OpenPeriod(),
		SkipResources:   !boolOr(s.Resources, true),
		SkipPrompts:     !boolOr(s.ListPrompts, true),
		OAuth:           oauthConfig(s.OAuth),
	}
}

// OAuthSpecs returns the specs of c's servers that have an oauth block, by
// handle key (switchboard auth).
func OAuthSpecs(c *config.Config) map[string]upstream.Spec {
	_, specs := Plan(c)
	for k, sp := range specs {
		if sp.OAuth == nil {
			delete(specs, k)
		}
	}
	return specs
}

// oauthConfig is a server's oauth block as upstream takes it.
func oauthConfig(o *config.OAuth) *oauth.Config {
	if o == nil {
		return nil
	}
	return &oauth.Config{
		Grant: o.Grant, Scopes: o.Scopes, ClientID: o.ClientID, ClientSecret: o.ClientSecret,
		ClientMetadataURL: o.ClientMetadataURL, PrivateKey: o.PrivateKey, SigningAlgorithm: o.SigningAlgorithm,
		Assertion: o.Assertion, RedirectURI: o.RedirectURI, IDPIssuer: o.IDPIssuer, IDPClientID: o.IDPClientID,
		IDPClientSecret: o.IDPClientSecret, IDToken: o.IDToken, IDPTokenEndpoint: o.IDPTokenEndpoint, TokenStore: o.TokenStore, TokenStoreKey: o.TokenStoreKey,
		DPoP: o.DPoP, PerCaller: o.PerCaller,
	}
}

// specTransport is the transport a server runs with; a url-only entry
// that names none is auto (streamable HTTP, legacy SSE on a 4xx refusal).
func specTransport(s *config.Server) string {
	if s.TransportUnset() {
		return upstream.TransportAuto
	}
	return s.EffectiveTransport()
}

// egressAllow turns a validated egress allow-list into its patterns.
func egressAllow(allow []string) []upstream.OriginPattern {
	var out []upstream.OriginPattern
	for _, a := range allow {
		if scheme, host, port, err := config.ParseOrigin(a); err == nil {
			out = append(out, upstream.OriginPattern{Scheme: scheme, Host: host, Port: port})
		}
	}
	return out
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// PlannedServer is one server of one view before handles exist.
type PlannedServer struct {
	key, handleKey string
	cfg            *config.Server
	spec           upstream.Spec
}

// Plan lists, per view id, the enabled servers it exposes, and the
// specs of every distinct handle. A server shared by several views has one
// handle; an agent that overrides a default server gets its own.
func Plan(c *config.Config) (map[string][]PlannedServer, map[string]upstream.Spec) {
	base := c.BaseServers()
	views := map[string][]PlannedServer{}
	specs := map[string]upstream.Spec{}
	add := func(view string, servers map[string]*config.Server, own map[string]bool) {
		for _, k := range SortedKeys(servers) {
			s := servers[k]
			if s == nil || !s.IsEnabled() {
				continue
			}
			hk := k
			if own[k] {
				hk = k + "@" + view
			}
			spec := serverSpec(k, s)
			spec.EgressAllow = egressAllow(c.EgressAllow(s))
			if hk != k {
				spec.Name = hk
			}
			specs[hk] = spec
			views[view] = append(views[view], PlannedServer{key: k, handleKey: hk, cfg: s, spec: spec})
		}
	}
	add("", base, nil)
	if c.Agents != nil {
		for _, ag := range c.Agents.List {
			if ag == nil {
				continue
			}
			own := map[string]bool{}
			merged := base
			if ag.MCP != nil && len(ag.MCP.Servers) > 0 {
				merged = config.MergeServers(base, ag.MCP.Servers)
				for k := range ag.MCP.Servers {
					own[k] = true
				}
			}
			add(ag.ID, merged, own)
		}
	}
	return views, specs
}

// KeepLimiters takes over prev's limiter for every view whose rate limit
// a reload left as it was, so that a reload never refills a budget (nor
// forgets one spent): buckets belong to callers, not to generations.
func (s *Snapshot) KeepLimiters(prev *Snapshot) {
	if prev == nil {
		return
	}
	for id, lim := range s.Limiters {
		if old := prev.Limiters[id]; old.SameRate(lim) {
			s.Limiters[id] = old
		}
	}
}

// NewSnapshot assembles a snapshot from a validated config and handles
// that already exist for every planned spec.
func NewSnapshot(gen int64, c *config.Config, handles map[string]*upstream.Handle, views map[string][]PlannedServer) *Snapshot {
	s := &Snapshot{
		Gen:      gen,
		Digest:   c.Digest(),
		Config:   c,
		Handles:  handles,
		Views:    map[string]*Spec{},
		Sanitize: sanitizeOptions(c),
		PinMode:  "warn",
	}
	if c.Sanitize != nil && c.Sanitize.PinTools != "" {
		s.PinMode = c.Sanitize.PinTools
	}
	s.Limiters = map[string]*policy.Limiter{}
	if c.Limits != nil {
		s.Limiters[""] = policy.NewLimiter(*c.Limits)
	}
	if c.Agents != nil {
		for _, ag := range c.Agents.List {
			switch {
			case ag == nil:
			case ag.Limits != nil:
				s.Limiters[ag.ID] = policy.NewLimiter(*ag.Limits)
			case c.Limits != nil:
				s.Limiters[ag.ID] = policy.NewLimiter(*c.Limits)
			}
		}
	}
	global := mustCompile(c.Tools)
	globalPrompts := mustCompile(c.Prompts)
	var defaultsTools *policy.Layer
	if c.Agents != nil && c.Agents.Defaults != nil {
		defaultsTools = mustCompile(c.Agents.Defaults.Tools)
	}
	agentTools := map[string]*policy.Layer{}
	agentDiscovery := map[string]*config.Discovery{}
	readOnly := map[string]bool{"": c.ReadOnly(nil)}
	if c.Agents != nil {
		for _, ag := range c.Agents.List {
			if ag != nil {
				agentTools[ag.ID] = mustCompile(ag.Tools)
				agentDiscovery[ag.ID] = ag.Discovery
				readOnly[ag.ID] = c.ReadOnly(ag)
			}
		}
	}
	for id, planned := range views {
		vs := &Spec{ID: id, Tools: policy.Chain{global, defaultsTools}, Prompts: policy.Chain{globalPrompts}, ReadOnly: readOnly[id]}
		if id != "" {
			vs.Tools = append(vs.Tools, agentTools[id])
		}
		vs.setDiscovery(cmp.Or(agentDiscovery[id], c.Discovery))
		for _, p := range planned {
			vs.Servers = append(vs.Servers, &ServerEntry{
				Key:         p.key,
				Prefix:      router.Prefix(p.key, p.cfg.ToolPrefix),
				HandleKey:   p.handleKey,
				Handle:      handles[p.handleKey],
				Tools:       mustCompile(p.cfg.Tools),
				Prompts:     mustCompile(p.cfg.Prompts),
				Wrap:        boolOr(p.cfg.Wrap, s.Sanitize.Wrap),
				Bare:        !boolOr(p.cfg.Namespace, true),
				PerClient:   p.cfg.Isolation == "per-client",
				Resources:   boolOr(p.cfg.Resources, true),
				Filter:      p.cfg.ResourceFilter,
				ListPrompts: boolOr(p.cfg.ListPrompts, true),

				TrustAnnotations: p.cfg.TrustAnnotations,
				Annotations:      p.cfg.Annotations,
			})
		}
		s.Views[id] = vs
	}
	if _, ok := s.Views[""]; !ok {
		s.Views[""] = &Spec{Tools: policy.Chain{global, defaultsTools}, Prompts: policy.Chain{globalPrompts}, ReadOnly: readOnly[""]}
		s.Views[""].setDiscovery(c.Discovery)
	}
	return s
}

// setDiscovery sets the view's discovery settings (validated).
func (vs *Spec) setDiscovery(d *config.Discovery) {
	vs.Discovery = d
	if d != nil && len(d.AlwaysVisible) > 0 {
		vs.AlwaysVisible = mustCompile(&policy.Rules{Allow: d.AlwaysVisible})
	}
}

// mustCompile compiles rules that Validate already accepted.
func mustCompile(r *policy.Rules) *policy.Layer {
	if r == nil {
		return nil
	}
	l, err := policy.Compile(*r)
	if err != nil {
		panic("proxy: rules passed validation but do not compile: " + err.Error())
	}
	return l
}

func sanitizeOptions(c *config.Config) sanitize.Options {
	o := sanitize.Options{
		Wrap:           true,
		OnSuspicious:   sanitize.Mode("warn"),
		MaxResultBytes: config.DefaultMaxResultBytes,
		MaxMediaBytes:  config.DefaultMaxMediaBytes,
	}
	if s := c.Sanitize; s != nil {
		o.Wrap = boolOr(s.WrapResults, true)
		if s.OnSuspicious != "" {
			o.OnSuspicious = sanitize.Mode(s.OnSuspicious)
		}
		if s.MaxResultBytes != nil {
			o.MaxResultBytes = *s.MaxResultBytes
		}
		if s.MaxMediaBytes != nil {
			o.MaxMediaBytes = *s.MaxMediaBytes
		}
	}
	return o
}

func maxDescriptionChars(c *config.Config) int {
	if c.Sanitize != nil && c.Sanitize.MaxDescriptionChars != nil {
		return *c.Sanitize.MaxDescriptionChars
	}
	return config.DefaultMaxDescChars
}

func PinFilePath(c *config.Config) string {
	if c.Sanitize != nil {
		return c.Sanitize.PinFile
	}
	return ""
}
