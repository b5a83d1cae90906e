package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcp-switchboard/switchboard/policy"
	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/secrets"
)

var (
	agentIDRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	envNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerRE    = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	logLevels   = []string{"trace", "debug", "info", "warn", "error", "off"}
	transports  = []string{"stdio", "sse", "http"}
	protocols   = []string{"auto", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	isolations  = []string{"shared", "per-client"}
	lazyLists   = []string{"start", "cached"}
	redirects   = []string{"same-origin", "any", "none"}
	suspicious  = []string{"warn", "annotate", "block"}
	pinModes    = []string{"warn", "block", "off"}
	schemaProfs = []string{"verbatim", "strict-llm"}
	auditErrors = []string{"continue", "refuse"}
)

// transportAliases maps the spellings found in the wild to ours.
var transportAliases = map[string]string{
	"stdio": "stdio", "sse": "sse", "http": "http",
	"streamable-http": "http", "streamablehttp": "http", "streamable_http": "http", "streamableHttp": "http",
}

// Validate runs every semantic check and reports all problems at once, each
// with its field path.
func (c *Config) Validate() error {
	v := validator{idp: c.Auth != nil && c.Auth.OAuth != nil, callers: c.Auth != nil && len(c.Auth.Tokens) > 0}
	v.settings(c)
	for _, k := range sortedKeys(c.MCPServers) {
		v.server(joinKey(c.serversPath(), k), k, c.MCPServers[k])
	}
	v.agents(c.Agents, c.MCPServers)
	if c.Auth != nil {
		v.tokens("auth.tokens", c.Auth.Tokens)
		v.protectedResource("auth.oauth", c.Auth.OAuth, c.Agents)
	}
	if c.Admin != nil && c.Admin.ReloadToken != "" {
		v.secretRefs("admin.reloadToken", c.Admin.ReloadToken)
	}
	v.sanitize(c.Sanitize)
	base := c.BaseServers()
	v.viewPrefixes(base, c.Agents)
	v.requireReady(c.RequireReady, base)
	return errors.Join(v.errs...)
}

// settings checks the top-level settings: listeners, logging, the global
// rules and limits, timeouts and allowed hosts.
func (v *validator) settings(c *Config) {
	v.listenAddr("listen", c.Listen)
	v.listenAddr("adminListen", c.AdminListen)
	v.oneOf("logLevel", strings.ToLower(c.LogLevel), logLevels)
	v.oneOf("logFormat", c.LogFormat, []string{"text", "json"})
	v.rules("tools", c.Tools)
	v.promptRules("prompts", c.Prompts)
	v.limit("limits", c.Limits)
	v.positiveMS("shutdownTimeout", c.ShutdownTimeoutMS)
	v.positiveMS("drainTimeout", c.DrainTimeoutMS)
	if ms := c.FirstListTimeoutMS; ms != nil && *ms < 0 {
		v.add("firstListTimeout", "must be 0 (lists never wait for a start) or a positive number of milliseconds")
	}
	v.positiveMS("readTimeout", c.ReadTimeoutMS)
	if ms := c.SessionIdleTimeoutMS; ms != nil && *ms < 0 {
		v.add("sessionIdleTimeout", "must be 0 (sessions never expire) or a positive number of milliseconds")
	}
	if ms := c.SessionMaxAgeMS; ms != nil && *ms < 0 {
		v.add("sessionMaxAge", "must be 0 (session IDs never expire) or a positive number of milliseconds")
	}
	if n := c.MaxSessions; n != nil && *n <= 0 {
		v.add("maxSessions", "must be a positive number of sessions")
	}
	v.discovery("discovery", c.Discovery)
	v.egress("egress", c.Egress)
	if c.Audit != nil {
		v.oneOf("audit.onError", c.Audit.OnError, auditErrors)
	}
	for i, h := range c.AllowedHosts {
		if strings.TrimSpace(h) == "" {
			v.add(joinIndex("allowedHosts", i), "must not be empty")
		}
	}
}

// agents checks the agent defaults and every agent. top holds mcpServers,
// which no default server may redefine.
func (v *validator) agents(a *Agents, top map[string]*Server) {
	if a == nil {
		return
	}
	if d := a.Defaults; d != nil {
		if d.MCP != nil {
			for _, k := range sortedKeys(d.MCP.Servers) {
				p := joinKey("agents.defaults.mcp.servers", k)
				if _, dup := top[k]; dup {
					v.add(p, fmt.Sprintf("server %q is also defined in mcpServers; define it once", k))
				}
				v.server(p, k, d.MCP.Servers[k])
			}
		}
		v.rules("agents.defaults.tools", d.Tools)
	}
	seen := map[string]int{}
	for i, ag := range a.List {
		v.agent(i, ag, seen)
	}
}

// agent checks agents.list[i]. seen maps the IDs of the agents before it to
// their index, to report a duplicate ID.
func (v *validator) agent(i int, ag *Agent, seen map[string]int) {
	p := joinIndex("agents.list", i)
	if ag == nil {
		v.add(p, "must be an object")
		return
	}
	switch {
	case ag.ID == "":
		v.add(p+".id", "required")
	case !agentIDRE.MatchString(ag.ID):
		v.add(p+".id", "must match ^[A-Za-z0-9_-]{1,64}$")
	default:
		if j, dup := seen[ag.ID]; dup {
			v.add(p+".id", fmt.Sprintf("duplicate agent id %q (also agents.list[%d])", ag.ID, j))
		}
		seen[ag.ID] = i
	}
	if ag.MCP != nil {
		for _, k := range sortedKeys(ag.MCP.Servers) {
			v.server(joinKey(p+".mcp.servers", k), k, ag.MCP.Servers[k])
		}
	}
	v.rules(p+".tools", ag.Tools)
	v.limit(p+".limits", ag.Limits)
	v.tokens(p+".tokens", ag.Tokens)
	v.discovery(p+".discovery", ag.Discovery)
}

// discovery checks a view's discovery settings.
func (v *validator) discovery(p string, d *Discovery) {
	if d == nil {
		return
	}
	v.oneOf(p+".mode", d.Mode, []string{DiscoveryAll, DiscoverySearch})
	for i, g := range d.AlwaysVisible {
		if err := policy.ValidatePattern(g); err != nil {
			v.add(joinIndex(p+".alwaysVisible", i), err.Error())
		}
	}
	if n := d.MaxDescriptionChars; n != nil && *n < 0 {
		v.add(p+".maxDescriptionChars", "must be 0 (no cap of its own) or a positive number of characters")
	}
}

// sanitize checks the sanitize section's modes and bounds.
func (v *validator) sanitize(s *Sanitize) {
	if s == nil {
		return
	}
	v.oneOf("sanitize.onSuspicious", s.OnSuspicious, suspicious)
	v.oneOf("sanitize.pinTools", s.PinTools, pinModes)
	v.oneOf("sanitize.schemaProfile", s.SchemaProfile, schemaProfs)
	if s.MaxResultBytes != nil && *s.MaxResultBytes <= 0 {
		v.add("sanitize.maxResultBytes", "must be positive")
	}
	if s.MaxMediaBytes != nil && *s.MaxMediaBytes <= 0 {
		v.add("sanitize.maxMediaBytes", "must be positive")
	}
	if s.MaxDescriptionChars != nil && *s.MaxDescriptionChars < 64 {
		v.add("sanitize.maxDescriptionChars", "must be at least 64")
	}
}

// viewPrefixes checks that tool prefixes are unique within every view, or
// mcp_<prefix>_ would split two ways. The default view holds base
// (mcpServers and the defaults); each agent adds or overrides.
func (v *validator) viewPrefixes(base map[string]*Server, a *Agents) {
	v.prefixes("", base)
	if a == nil {
		return
	}
	for i, ag := range a.List {
		if ag == nil || ag.MCP == nil || len(ag.MCP.Servers) == 0 {
			continue
		}
		v.prefixes(joinIndex("agents.list", i), MergeServers(base, ag.MCP.Servers))
	}
}

// requireReady checks that every server named in requireReady is in base
// and starts at boot.
func (v *validator) requireReady(names []string, base map[string]*Server) {
	for i, name := range names {
		if s, ok := base[name]; !ok {
			v.add(joinIndex("requireReady", i), fmt.Sprintf("no server named %q in mcpServers or agents.defaults", name))
		} else if s != nil && s.Lazy {
			v.add(joinIndex("requireReady", i), fmt.Sprintf("server %q is lazy: it does not start at boot, so it cannot be required ready", name))
		}
	}
}

type validator struct {
	errs    []error
	idp     bool // auth.oauth is set: callers may carry the identity provider's tokens
	callers bool // auth.tokens is set: callers are told apart by their static tokens
}

func (v *validator) add(path, reason string) {
	v.errs = append(v.errs, &FieldError{Path: path, Reason: reason})
}

func (v *validator) oneOf(path, val string, allowed []string) {
	if val == "" {
		return
	}
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.add(path, fmt.Sprintf("%q is not one of %s", val, strings.Join(allowed, ", ")))
}

func (v *validator) listenAddr(path, addr string) {
	if addr == "" {
		return
	}
	// An empty host means every interface, which is allowed.
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.add(path, fmt.Sprintf("want host:port, got %q", addr))
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.add(path, fmt.Sprintf("port %q is not a number from 0 to 65535", port))
	}
}

func (v *validator) positiveMS(path string, ms *int) {
	if ms != nil && *ms <= 0 {
		v.add(path, "must be a positive number of milliseconds")
	}
}

func (v *validator) rules(path string, r *policy.Rules) {
	if r == nil {
		return
	}
	if _, err := policy.Compile(*r); err != nil {
		v.errs = append(v.errs, prefixErrors(path, err)...)
	}
}

// promptRules checks prompt rules: as tool rules, but classes are about
// what tools do and name no prompt.
func (v *validator) promptRules(path string, r *policy.Rules) {
	v.rules(path, r)
	if r == nil {
		return
	}
	for i, p := range r.Deny {
		if strings.HasPrefix(p, policy.ClassPrefix) {
			v.add(joinIndex(path+".deny", i), fmt.Sprintf("%q: classes apply to tools only", p))
		}
	}
}

func (v *validator) limit(path string, l *policy.Limit) {
	if l == nil {
		return
	}
	if err := l.Validate(); err != nil {
		v.errs = append(v.errs, prefixErrors(path, err)...)
	}
}

func (v *validator) tokens(path string, toks []string) {
	for i, t := range toks {
		p := joinIndex(path, i)
		if t == "" {
			v.add(p, "must not be empty")
			continue
		}
		v.secretRefs(p, t)
	}
}

func (v *validator) secretRefs(path, val string) {
	if strings.Contains(val, "${input:") {
		_, err := secrets.Rewrite(val, func(inner string) (string, error) {
			if strings.HasPrefix(inner, "input:") {
				return "", errors.New(unsupportedVariable(inner))
			}
			return "", nil
		})
		if err != nil {
			v.errs = append(v.errs, prefixErrors(path, err)...)
			return
		}
	}
	if err := secrets.Check(val); err != nil {
		v.add(path, err.Error())
	}
}

// prefixErrors puts path in front of every error a leaf returned.
func prefixErrors(path string, err error) []error {
	var out []error
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			out = append(out, prefixErrors(path, e)...)
		}
		return out
	}
	return []error{&FieldError{Path: path, Reason: err.Error()}}
}

// server checks one server definition at path; key is its name.
func (v *validator) server(path, key string, s *Server) {
	if key == "" {
		v.add(path, "server name must not be empty")
	}
	if s == nil {
		v.add(path, "must be an object")
		return
	}
	tr, err := s.transport()
	if err != nil {
		v.add(path+".transport", err.Error())
	}
	if s.Enabled != nil && s.Disabled != nil && *s.Enabled == *s.Disabled {
		v.add(path+".enabled", "contradicts disabled; set one of them")
	}
	switch tr {
	case "stdio":
		v.stdioServer(path, s)
	case "sse", "http":
		v.remoteServer(path, tr, s)
	case "":
		if err == nil {
			v.add(path, `needs "command" (a stdio server) or "url" (an http or sse server)`)
		}
	}
	v.restarts(path, s)
	v.toolNaming(path, s)
	v.oneOf(path+".lazyList", s.LazyList, lazyLists)
	if s.LazyList != "" && !s.Lazy {
		v.add(path+".lazyList", `only applies with "lazy": true`)
	}
	v.positiveMS(path+".idleTimeout", s.IdleTimeoutMS)
	if s.IdleTimeoutMS != nil && !s.Lazy {
		v.add(path+".idleTimeout", `only applies with "lazy": true (a server that is not lazy starts at boot and is never stopped for being idle)`)
	}
	v.oneOf(path+".isolation", s.Isolation, isolations)
	v.oneOf(path+".protocol", s.Protocol, protocols)
	v.serverEgress(path, tr, s)
	v.oauth(path, tr, s)
	v.rules(path+".tools", s.Tools)
	v.promptRules(path+".prompts", s.Prompts)
	v.annotations(path, s)
	for i, f := range s.ResourceFilter {
		if f == "" {
			v.add(joinIndex(path+".resourceFilter", i), "must not be empty")
		}
	}
	if b := s.Breaker; b != nil {
		if b.Failures != nil && *b.Failures < 1 {
			v.add(path+".breaker.failures", "must be at least 1")
		}
		v.positiveMS(path+".breaker.openMs", b.OpenMS)
	}
}

// stdioServer checks the transport fields of a stdio server: a command, no
// URL or headers, valid environment names, and the secret references in
// env and args.
func (v *validator) stdioServer(path string, s *Server) {
	if strings.TrimSpace(s.Command) == "" {
		v.add(path+".command", `required for transport "stdio"`)
	}
	if s.URL != "" {
		v.add(s.urlPath(path), `not allowed for transport "stdio" (did you mean "type": "http"?)`)
	}
	if s.EnvFile != "" {
		// Load reads it and clears it; a config that only went through
		// Parse would start the server without it.
		v.add(path+".envFile", "not read: the config was parsed without its file's location (config.Load reads envFile)")
	}
	if self, why := startsSelf(s.Command, s.Args); self {
		v.add(path+".command", fmt.Sprintf("runs switchboard itself (%s), which would start its own servers again without end; point this entry at the MCP servers themselves", why))
	}
	if len(s.Headers) > 0 {
		v.add(path+".headers", `not allowed for transport "stdio"`)
	}
	for _, k := range sortedKeys(s.Env) {
		p := joinKey(path+".env", k)
		if !envNameRE.MatchString(k) {
			v.add(p, "not a valid environment variable name")
		}
		v.secretRefs(p, s.Env[k])
	}
	for i, a := range s.Args {
		v.secretRefs(joinIndex(path+".args", i), a)
	}
}

// remoteServer checks the transport fields of a server reached over tr
// ("sse" or "http"): an absolute URL, none of the process fields, and valid
// header names whose values hold valid secret references.
func (v *validator) remoteServer(path, tr string, s *Server) {
	what := fmt.Sprintf("for transport %q", tr)
	if s.TransportUnset() {
		what = "for a server with a url"
	}
	up := s.urlPath(path)
	if s.URL == "" {
		v.add(up, "required "+what)
	} else if secrets.HasRefs(s.URL) {
		v.secretRefs(up, s.URL)
	} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(up, fmt.Sprintf("want an absolute http or https URL, got %q", s.URL))
	}
	if s.Command != "" {
		v.add(path+".command", "not allowed "+what)
	}
	if len(s.Args) > 0 {
		v.add(path+".args", "not allowed "+what)
	}
	if len(s.Env) > 0 {
		v.add(path+".env", "not allowed "+what+"; use headers")
	}
	if s.EnvFile != "" {
		v.add(path+".envFile", "not allowed "+what+"; use headers")
	}
	if s.Cwd != "" {
		v.add(path+".cwd", "not allowed "+what)
	}
	for _, k := range sortedKeys(s.Headers) {
		p := joinKey(path+".headers", k)
		if !headerRE.MatchString(k) {
			v.add(p, "not a valid HTTP header name")
		}
		v.secretRefs(p, s.Headers[k])
	}
}

// restarts checks a server's timeouts and its restart count and backoff.
func (v *validator) restarts(path string, s *Server) {
	v.positiveMS(path+".timeout", s.TimeoutMS)
	v.positiveMS(path+".toolTimeout", s.ToolTimeoutMS)
	if s.MaxRestarts != nil && *s.MaxRestarts < 0 {
		v.add(path+".maxRestarts", "must not be negative")
	}
	if b := s.RestartBackoff; b != nil {
		v.positiveMS(path+".restartBackoff.initialMs", b.InitialMS)
		v.positiveMS(path+".restartBackoff.maxMs", b.MaxMS)
		if initial, longest := b.Delays(); b.InitialMS != nil && b.MaxMS != nil && initial > longest {
			v.add(path+".restartBackoff", fmt.Sprintf("initialMs (%d) is over maxMs (%d)", *b.InitialMS, *b.MaxMS))
		}
	}
}

// toolNaming checks toolPrefix: it must have an effect, and be a prefix that
// keeps public names unambiguous.
func (v *validator) toolNaming(path string, s *Server) {
	if s.Namespace != nil && !*s.Namespace && s.ToolPrefix != "" {
		v.add(path+".toolPrefix", "has no effect with namespace: false; remove one of them")
	}
	if s.ToolPrefix != "" && !router.ValidPrefix(s.ToolPrefix) {
		v.add(path+".toolPrefix", "must match ^[A-Za-z0-9-]{1,32}$ (no underscores, so public names split one way)")
	}
}

// transport returns the normalised transport of s: transport or type, else
// stdio when a command is set, else http when a url is. With
// neither it returns "" and no error: server reports what is missing.
func (s *Server) transport() (string, error) {
	t, ty := s.Transport, s.Type
	if t != "" && ty != "" {
		nt, nty := transportAliases[t], transportAliases[ty]
		if nt != nty {
			return "", fmt.Errorf("%q contradicts type %q; set one of them", t, ty)
		}
	}
	if t == "" {
		t = ty
	}
	if t == "" {
		switch {
		case strings.TrimSpace(s.Command) != "":
			return "stdio", nil
		case s.URL != "":
			return "http", nil
		}
		return "", nil
	}
	n, ok := transportAliases[t]
	if !ok {
		return "", fmt.Errorf("%q is not one of %s", t, strings.Join(transports, ", "))
	}
	return n, nil
}

func (v *validator) prefixes(view string, servers map[string]*Server) {
	owner := map[string]string{}
	for _, k := range sortedKeys(servers) {
		s := servers[k]
		if s == nil || k == "" || !s.IsEnabled() || (s.Namespace != nil && !*s.Namespace) {
			continue
		}
		p := router.Prefix(k, s.ToolPrefix)
		if other, dup := owner[p]; dup {
			where := "mcpServers"
			if view != "" {
				where = view
			}
			v.add(where, fmt.Sprintf("servers %q and %q both get the tool prefix %q; set toolPrefix on one of them", other, k, p))
			continue
		}
		owner[p] = k
	}
}
