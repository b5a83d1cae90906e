package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/mcp-switchboard/switchboard/policy"
)

// Defaults for fields the config may leave out. values.yaml in the chart
// repeats them; keep both in step.
const (
	DefaultListen           = "127.0.0.1:8931"
	DefaultAdminListen      = "127.0.0.1:8932"
	DefaultTimeoutMS        = 30000
	DefaultToolTimeoutMS    = 60000
	DefaultMaxRestarts      = 5
	DefaultMaxResultBytes   = 50 << 20
	DefaultMaxMediaBytes    = 20 << 20
	DefaultMaxDescChars     = 4096
	DefaultShutdownMS       = 10000
	DefaultDrainMS          = 30000
	DefaultFirstListMS      = 4000
	DefaultBreakerFailures  = 5
	DefaultBreakerOpenMS    = 30000
	DefaultBackoffInitialMS = 1000
	DefaultBackoffMaxMS     = 30000
	DefaultSessionIdleMS    = 1800000
	DefaultSessionMaxAgeMS  = 86400000
	DefaultMaxSessions      = 1000
	DefaultReadTimeoutMS    = 30000
)

// Config is the whole config file. JSON and YAML share this schema; unknown
// fields are errors. Field names follow Claude Desktop's mcpServers files so
// users' existing files parse unchanged. Fields ending in MS hold
// milliseconds as written; a method returns each as a duration with its
// default applied (DrainTimeout, Server.ConnectTimeout, …).
type Config struct {
	Listen            string             `json:"listen,omitempty"`
	AdminListen       string             `json:"adminListen,omitempty"`
	LogLevel          string             `json:"logLevel,omitempty"`
	LogFormat         string             `json:"logFormat,omitempty"`
	MCPServers        map[string]*Server `json:"mcpServers,omitempty"`
	Tools             *policy.Rules      `json:"tools,omitempty"`
	Prompts           *policy.Rules      `json:"prompts,omitempty"`
	Agents            *Agents            `json:"agents,omitempty"`
	Auth              *Auth              `json:"auth,omitempty"`
	Admin             *Admin             `json:"admin,omitempty"`
	Sanitize          *Sanitize          `json:"sanitize,omitempty"`
	Telemetry         *Telemetry         `json:"telemetry,omitempty"`
	Audit             *Audit             `json:"audit,omitempty"`
	Limits            *policy.Limit      `json:"limits,omitempty"`
	RequireReady      []string           `json:"requireReady,omitempty"`
	ShutdownTimeoutMS *int               `json:"shutdownTimeout,omitempty"`
	DrainTimeoutMS    *int               `json:"drainTimeout,omitempty"`
	AllowedHosts      []string           `json:"allowedHosts,omitempty"`
	// SessionIdleTimeoutMS ends a streamable-HTTP session that had no
	// request and no open stream for this long (0: never).
	SessionIdleTimeoutMS *int `json:"sessionIdleTimeout,omitempty"`
	// SessionMaxAgeMS is how long a session ID lasts after it was issued,
	// wherever it is resumed (0: for ever).
	SessionMaxAgeMS *int `json:"sessionMaxAge,omitempty"`
	// MaxSessions caps the open downstream sessions per token (per view
	// without tokens).
	MaxSessions *int `json:"maxSessions,omitempty"`
	// ReadTimeoutMS bounds how long a downstream request's headers, and
	// then its body, may take to arrive.
	ReadTimeoutMS *int `json:"readTimeout,omitempty"`
	// Discovery is how the default view lists its tools (and every agent's
	// that sets none of its own).
	Discovery *Discovery `json:"discovery,omitempty"`
	// RequestStateKey keys the HMAC of the requestStates switchboard gives
	// 2026-07-28 clients (usually a secret:// reference): replicas that
	// share it accept each other's. Unset: a key made per process.
	RequestStateKey string `json:"requestStateKey,omitempty"`
	// SessionKey keys the streamable-HTTP session IDs (usually a
	// secret:// reference): replicas that share it resume each other's
	// sessions. Unset: a key made per process.
	SessionKey string `json:"sessionKey,omitempty"`
	// CatalogCache is the directory where each server's last listed
	// catalog is kept, so that the first lists after a start answer at
	// once: "" is switchboard/catalogs under the user's cache directory,
	// "off" keeps none.
	CatalogCache string `json:"catalogCache,omitempty"`
	// FirstListTimeoutMS bounds how long a list waits for servers still
	// on their first start that have no cached catalog; the servers that
	// come later are announced with list_changed.
	FirstListTimeoutMS *int `json:"firstListTimeout,omitempty"`
	// Egress limits the origins remote servers' requests may reach; a
	// server's own egress replaces it. Unset: any origin.
	Egress *Egress `json:"egress,omitempty"`

	// Notes is what loading the file decided that is not an error: keys
	// of another client it skipped, values it read in another client's
	// unit, variables that are not set. It is not part of the schema, the
	// canonical JSON or the digest.
	Notes Notes `json:"-"`

	// serversKey is the key the servers came from: "servers" for VS Code's
	// files, else "" (mcpServers). Validate names paths after it.
	serversKey string
}

// Server is one entry of mcpServers (or an agent's mcp.servers).
type Server struct {
	Enabled        *bool             `json:"enabled,omitempty"`
	Disabled       *bool             `json:"disabled,omitempty"` // Cline's spelling of enabled:false
	Transport      string            `json:"transport,omitempty"`
	Type           string            `json:"type,omitempty"` // Claude Code's alias of transport
	Command        string            `json:"command,omitempty"`
	Args           []string          `json:"args,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	EnvFile        string            `json:"envFile,omitempty"` // Cursor's and VS Code's KEY=VALUE file; Load reads it into env and clears it
	URL            string            `json:"url,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	TimeoutMS      *int              `json:"timeout,omitempty"`     // to connect and initialize
	ToolTimeoutMS  *int              `json:"toolTimeout,omitempty"` // per call
	RestartOnCrash *bool             `json:"restartOnCrash,omitempty"`
	MaxRestarts    *int              `json:"maxRestarts,omitempty"`
	ToolPrefix     string            `json:"toolPrefix,omitempty"`
	Namespace      *bool             `json:"namespace,omitempty"` // false: publish tools and prompts under their own names
	Lazy           bool              `json:"lazy,omitempty"`
	LazyList       string            `json:"lazyList,omitempty"`    // lazy servers at tools/list: "start" (default, hold the answer) or "cached" (answer at once); see upstream.LazyListStart
	IdleTimeoutMS  *int              `json:"idleTimeout,omitempty"` // lazy servers: stop after this long without a request (absent: never)
	Isolation      string            `json:"isolation,omitempty"`
	Protocol       string            `json:"protocol,omitempty"`
	Tools          *policy.Rules     `json:"tools,omitempty"`
	Prompts        *policy.Rules     `json:"prompts,omitempty"`
	Resources      *bool             `json:"resources,omitempty"`   // false: resources/list and resources/templates/list are never asked for
	ListPrompts    *bool             `json:"listPrompts,omitempty"` // false: prompts/list is never asked for (prompts holds the server's prompt globs)
	ResourceFilter []string          `json:"resourceFilter,omitempty"`
	Wrap           *bool             `json:"wrap,omitempty"`
	Breaker        *Breaker          `json:"breaker,omitempty"`
	RestartBackoff *Backoff          `json:"restartBackoff,omitempty"`
	// FollowRedirects is what a remote server's redirects may do:
	// "same-origin" (the default), "any" or "none". Configured headers
	// never go to another origin.
	FollowRedirects string `json:"followRedirects,omitempty"`
	// Egress replaces the top level's egress for this server.
	Egress *Egress `json:"egress,omitempty"`
	// TrustAnnotations and Annotations: see annotations.go.
	TrustAnnotations bool                        `json:"trustAnnotations,omitempty"`
	Annotations      map[string]*ToolAnnotations `json:"annotations,omitempty"`
	// OAuth makes switchboard an OAuth client of a remote server (oauth.go).
	OAuth *OAuth `json:"oauth,omitempty"`

	// urlKey is the key the URL came from when it is not "url"
	// (Windsurf's "serverUrl"), for error paths.
	urlKey string
}

// Egress limits where switchboard's HTTP client for remote servers may
// connect.
type Egress struct {
	// Allow lists origins as scheme://host[:port], where host may be "*"
	// or "*.example.com" and port "*" (upstream.OriginPattern). Every
	// request, redirects included, must go to one of them.
	Allow []string `json:"allow,omitempty"`
}

// Backoff tunes the delay between restart attempts: initialMs, doubled at
// each failed attempt up to maxMs.
type Backoff struct {
	InitialMS *int `json:"initialMs,omitempty"`
	MaxMS     *int `json:"maxMs,omitempty"`
}

// Breaker tunes one server's circuit breaker.
type Breaker struct {
	Failures *int `json:"failures,omitempty"` // consecutive failures that open it
	OpenMS   *int `json:"openMs,omitempty"`   // how long it stays open before a probe
}

// Agents is the openclaw-shaped agent list.
type Agents struct {
	Defaults *AgentDefaults `json:"defaults,omitempty"`
	List     []*Agent       `json:"list,omitempty"`
}

// AgentDefaults apply to every agent and to the default view.
type AgentDefaults struct {
	MCP      *AgentMCP     `json:"mcp,omitempty"`
	Tools    *policy.Rules `json:"tools,omitempty"`
	ReadOnly *bool         `json:"readOnly,omitempty"`
}

// AgentMCP holds an agent's servers.
type AgentMCP struct {
	Servers map[string]*Server `json:"servers,omitempty"`
}

// Agent is one agent view.
type Agent struct {
	ID        string        `json:"id"`
	MCP       *AgentMCP     `json:"mcp,omitempty"`
	Tools     *policy.Rules `json:"tools,omitempty"`
	ReadOnly  *bool         `json:"readOnly,omitempty"`
	Tokens    []string      `json:"tokens,omitempty"`
	Limits    *policy.Limit `json:"limits,omitempty"`
	Discovery *Discovery    `json:"discovery,omitempty"`
}

// Discovery is how a view lists its tools: all of them (the default), or,
// in search mode, switchboard's own find and call tools, those matching
// alwaysVisible and those the session found.
type Discovery struct {
	Mode string `json:"mode,omitempty"` // "all" or "search"
	// AlwaysVisible are globs over public names listed in search mode.
	AlwaysVisible []string `json:"alwaysVisible,omitempty"`
	// MaxDescriptionChars caps listed descriptions (the full text stays
	// searchable); 0 or unset: sanitize.maxDescriptionChars alone.
	MaxDescriptionChars *int `json:"maxDescriptionChars,omitempty"`
	// DropSchemaDescriptions removes the descriptions inside listed input
	// schemas in search mode: switchboard_find_tools returns them whole.
	DropSchemaDescriptions bool `json:"dropSchemaDescriptions,omitempty"`
}

// Discovery modes.
const (
	DiscoveryAll    = "all"
	DiscoverySearch = "search"
)

// Search reports whether d asks for search mode.
func (d *Discovery) Search() bool { return d != nil && d.Mode == DiscoverySearch }

// Admin configures the admin API.
type Admin struct {
	ReloadToken string `json:"reloadToken,omitempty"`
}

// Sanitize configures untrusted-content handling.
type Sanitize struct {
	WrapResults         *bool  `json:"wrapResults,omitempty"`
	OnSuspicious        string `json:"onSuspicious,omitempty"`
	PinTools            string `json:"pinTools,omitempty"`
	PinFile             string `json:"pinFile,omitempty"`
	MaxResultBytes      *int64 `json:"maxResultBytes,omitempty"`
	MaxMediaBytes       *int64 `json:"maxMediaBytes,omitempty"`
	MaxDescriptionChars *int   `json:"maxDescriptionChars,omitempty"`
	SchemaProfile       string `json:"schemaProfile,omitempty"`
}

// Telemetry configures metrics and traces.
type Telemetry struct {
	ServiceName string `json:"serviceName,omitempty"`
	Prometheus  *bool  `json:"prometheus,omitempty"`
}

// Audit configures the per-call audit log.
type Audit struct {
	Enabled   *bool  `json:"enabled,omitempty"`
	File      string `json:"file,omitempty"`
	Arguments bool   `json:"arguments,omitempty"`
	// OnError says what a tool call does while audit records cannot be
	// written: "continue" (it runs, its record is lost) or "refuse" (it is
	// refused before it reaches its server). If empty, "continue" is used.
	OnError string `json:"onError,omitempty"`
}

// Audit.OnError values.
const (
	AuditContinue = "continue"
	AuditRefuse   = "refuse"
)

var configType = reflect.TypeFor[Config]()

// Parse reads a JSON (comments and trailing commas allowed, as in VS Code's
// files) or YAML config. It accepts the files other MCP clients write
// (docs/client-configs.md): their own keys are skipped and listed in
// Notes. It reports every problem at once, each with its field path; when
// the schema has problems, the semantic checks of Validate run on what did
// decode, so one unknown field hides nothing else. It reads nothing but
// data: the parts of a file that refer to its surroundings (envFile,
// ${workspaceFolder}, variables) are Load's.
func Parse(data []byte) (*Config, error) {
	c, derr, err := parse(data)
	if err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, withValidation(c, derr)
	}
	return c, nil
}

// parse decodes data. err is a problem with the document as a whole (no
// config at all); derr holds the schema problems of a config that decoded
// in part, which c then holds.
func parse(data []byte) (c *Config, derr, err error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, errors.New("config is empty")
	}
	js := trimmed
	switch {
	case trimmed[0] == '{' || bytes.HasPrefix(trimmed, []byte("//")) || bytes.HasPrefix(trimmed, []byte("/*")):
		// Zed's settings.json opens with a comment.
		js = stripJSONC(trimmed)
	case looksLikeTOML(trimmed):
		if js, err = tomlToJSON(trimmed); err != nil {
			return nil, nil, err
		}
	default:
		js, err = yaml.YAMLToJSON(data)
		if err != nil {
			return nil, nil, fmt.Errorf("config is neither JSON nor YAML: %w", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, fmt.Errorf("config: %w", jsonSyntaxError(js, err))
	}
	if dec.More() {
		return nil, nil, errors.New("config: unexpected data after the top-level object")
	}
	if raw == nil {
		return nil, nil, errors.New("config is null")
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("config: want an object at the top level, got %s", kindName(raw))
	}
	c = &Config{}
	var errs []error
	d := decoder{errs: &errs}
	sh := clientPass(m, &c.Notes, d.fail)
	servers, hasServers := m["mcpServers"]
	if sh.serversKey != "" {
		delete(m, "mcpServers")
	}
	d.value("", m, reflect.ValueOf(c).Elem())
	if sh.serversKey != "" && hasServers {
		c.serversKey = sh.serversKey
		d.value(sh.serversKey, servers, reflect.ValueOf(&c.MCPServers).Elem())
	}
	for k, key := range sh.urlKeys {
		if s := c.MCPServers[k]; s != nil {
			s.urlKey = key
		}
	}
	sh.timeouts(c, &c.Notes)
	c.Notes.sort()
	return c, errors.Join(errs...), nil
}

// withValidation joins the schema problems derr with what Validate finds
// in the part of c that decoded, leaving out findings at or under a path
// that failed to decode (they would repeat the same problem).
func withValidation(c *Config, derr error) error {
	verr := c.Validate()
	if verr == nil {
		return derr
	}
	var bad []string
	for _, e := range unjoin(derr) {
		var fe *FieldError
		if errors.As(e, &fe) {
			bad = append(bad, fe.Path)
		}
	}
	out := unjoin(derr)
	for _, e := range unjoin(verr) {
		var fe *FieldError
		if errors.As(e, &fe) && under(fe.Path, bad) {
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// under reports whether path is one of paths or inside one of them.
func under(path string, paths []string) bool {
	for _, p := range paths {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

// unjoin lists the errors errors.Join put together, or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// jsonSyntaxError adds the line and column to a syntax error.
func jsonSyntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	line, col := 1, 1
	for _, b := range data[:max(0, min(int(se.Offset)-1, len(data)))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// Digest is a hash of the canonical parsed config. Formatting, key order and
// comments do not change it, so a no-op reload is skipped. Secret references
// are hashed as written, never resolved.
func (c *Config) Digest() string {
	b, err := json.Marshal(c)
	if err != nil {
		// Config holds only strings, numbers, bools, maps and slices.
		panic(fmt.Sprintf("config digest: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ApplyEnv applies the SWITCHBOARD_* overrides that getenv reports (env >
// file). It changes c, so it runs before Validate, never on a published
// config.
func (c *Config) ApplyEnv(getenv func(string) string) {
	if v := getenv("SWITCHBOARD_LISTEN"); v != "" {
		c.Listen = v
	}
	if v := getenv("SWITCHBOARD_ADMIN_LISTEN"); v != "" {
		c.AdminListen = v
	}
	if v := getenv("SWITCHBOARD_LOG_LEVEL"); v != "" {
		c.LogLevel = v
	}
	if v := getenv("SWITCHBOARD_LOG_FORMAT"); v != "" {
		c.LogFormat = v
	}
}

// ServerNames lists every server key of the default view (mcpServers and
// agents.defaults), sorted.
func (c *Config) ServerNames() []string {
	names := make([]string, 0, len(c.MCPServers))
	for k := range c.BaseServers() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// BaseServers returns the servers of the default view: mcpServers overlaid
// with agents.defaults.mcp.servers (Validate rejects a key in both). Every
// agent's view starts from it.
func (c *Config) BaseServers() map[string]*Server {
	var defaults map[string]*Server
	if a := c.Agents; a != nil && a.Defaults != nil && a.Defaults.MCP != nil {
		defaults = a.Defaults.MCP.Servers
	}
	return MergeServers(c.MCPServers, defaults)
}

// MergeServers returns a new map of base overlaid with over (over wins per
// key). The servers themselves are shared, not copied.
func MergeServers(base, over map[string]*Server) map[string]*Server {
	out := make(map[string]*Server, len(base)+len(over))
	for k, s := range base {
		out[k] = s
	}
	for k, s := range over {
		out[k] = s
	}
	return out
}

// ShutdownTimeout is shutdownTimeout: how long calls in flight may finish
// once a shutdown began.
func (c *Config) ShutdownTimeout() time.Duration { return ms(c.ShutdownTimeoutMS, DefaultShutdownMS) }

// SessionIdleTimeout is sessionIdleTimeout: how long a downstream session
// may sit idle before it ends; 0: never.
func (c *Config) SessionIdleTimeout() time.Duration {
	return ms(c.SessionIdleTimeoutMS, DefaultSessionIdleMS)
}

// SessionMaxAge is sessionMaxAge; 0: IDs never expire.
func (c *Config) SessionMaxAge() time.Duration { return ms(c.SessionMaxAgeMS, DefaultSessionMaxAgeMS) }

// ReadTimeout is readTimeout: how long a downstream request's headers,
// and then its body, may take to arrive.
func (c *Config) ReadTimeout() time.Duration { return ms(c.ReadTimeoutMS, DefaultReadTimeoutMS) }

// SessionLimit is maxSessions: the most downstream sessions one token (or
// view, without tokens) may hold open at once.
func (c *Config) SessionLimit() int {
	if c.MaxSessions == nil {
		return DefaultMaxSessions
	}
	return *c.MaxSessions
}

// DrainTimeout is drainTimeout: how long a removed or replaced server's
// calls in flight may finish after a reload.
func (c *Config) DrainTimeout() time.Duration { return ms(c.DrainTimeoutMS, DefaultDrainMS) }

// FirstListTimeout is firstListTimeout: how long a list may wait for
// servers on their first start that have no cached catalog.
func (c *Config) FirstListTimeout() time.Duration {
	return ms(c.FirstListTimeoutMS, DefaultFirstListMS)
}

// ConnectTimeout is timeout: how long a start, initialize and first
// listing may take.
func (s *Server) ConnectTimeout() time.Duration { return ms(s.TimeoutMS, DefaultTimeoutMS) }

// ToolTimeout is toolTimeout: how long one call may take.
func (s *Server) ToolTimeout() time.Duration { return ms(s.ToolTimeoutMS, DefaultToolTimeoutMS) }

// IdleTimeout is idleTimeout: how long a lazy server may go without a
// request before it is stopped; zero (the default) means never.
func (s *Server) IdleTimeout() time.Duration { return ms(s.IdleTimeoutMS, 0) }

// EffectiveTransport is the normalised transport ("stdio", "sse" or
// "http"): transport or type, else stdio when a command is set, else http
// when a url is. It is "" for a value Validate rejects. A url-only entry
// (TransportUnset) runs as auto, not http: streamable HTTP first, legacy
// SSE when the endpoint refuses it.
func (s *Server) EffectiveTransport() string {
	t, _ := s.transport()
	return t
}

// TransportUnset reports whether the server names no transport (neither
// transport nor type) and is reached by its url, as Cursor and Windsurf
// entries are. EffectiveTransport is then "http"; like those clients, the
// upstream may fall back to SSE when streamable HTTP is refused (see
// docs/client-configs.md).
func (s *Server) TransportUnset() bool {
	return s.Transport == "" && s.Type == "" && strings.TrimSpace(s.Command) == "" && s.URL != ""
}

// IsEnabled reports whether the server runs: enabled, else not disabled,
// else true.
func (s *Server) IsEnabled() bool {
	if s.Enabled != nil {
		return *s.Enabled
	}
	if s.Disabled != nil {
		return !*s.Disabled
	}
	return true
}

// OpenPeriod is openMs: how long the breaker stays open before a probe.
// b may be nil.
func (b *Breaker) OpenPeriod() time.Duration {
	if b == nil {
		return DefaultBreakerOpenMS * time.Millisecond
	}
	return ms(b.OpenMS, DefaultBreakerOpenMS)
}

// Delays are the first and the longest restart delay. b may be nil.
func (b *Backoff) Delays() (initial, longest time.Duration) {
	if b == nil {
		return DefaultBackoffInitialMS * time.Millisecond, DefaultBackoffMaxMS * time.Millisecond
	}
	return ms(b.InitialMS, DefaultBackoffInitialMS), ms(b.MaxMS, DefaultBackoffMaxMS)
}

// ms is *p milliseconds, or def milliseconds when p is nil.
func ms(p *int, def int) time.Duration {
	if p == nil {
		return time.Duration(def) * time.Millisecond
	}
	return time.Duration(*p) * time.Millisecond
}
