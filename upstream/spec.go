package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// Transports a Spec may name.
const (
	TransportStdio = "stdio"
	TransportSSE   = "sse"
	TransportHTTP  = "http"
	// TransportAuto is a remote entry that names no transport: streamable
	// HTTP first and, when the endpoint refuses the initialize POST with a
	// 4xx status, legacy HTTP+SSE, as MCP clients do.
	TransportAuto = "auto"
)

// What a tools/list does to a lazy server that has not started yet (see
// Handle.Warm).
const (
	// LazyListStart starts it and holds the listing until its first attempt
	// finished, at most the connect timeout, so the answer has its tools.
	LazyListStart = "start"
	// LazyListCached starts it in the background and answers at once with
	// the catalog known so far (none before the first start); its tools
	// follow with notifications/tools/list_changed.
	LazyListCached = "cached"
)

// Spec is everything needed to run one MCP server. Values may hold secret
// references; they are expanded through Options.Expander at every start.
type Spec struct {
	Name      string // config key, used in logs and errors
	Transport string // TransportStdio, TransportSSE, TransportHTTP or TransportAuto

	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	URL     string
	Headers map[string]string
	// FollowRedirects is what the server's redirects may do:
	// RedirectSameOrigin (what "" means), RedirectAny or RedirectNone.
	// Headers never go to another origin, whatever it says.
	FollowRedirects string `json:",omitempty"`
	// EgressAllow lists the origins the server's requests may reach,
	// redirects included; empty: any origin.
	EgressAllow []OriginPattern `json:",omitempty"`
	// OAuth, when set, makes switchboard the server's OAuth client (see
	// package upstream/oauth): its transport carries the handler's token
	// to the configured origin. Headers then hold no Authorization.
	OAuth *oauth.Config `json:",omitempty"`

	// Protocol pins the protocol version offered at initialize. "auto" or ""
	// lets the SDK probe 2026-07-28 first, which some legacy stdio servers
	// cannot survive; stdio servers therefore default to 2025-11-25.
	Protocol string

	ConnectTimeout time.Duration // connect + initialize + first listing; if zero, 30s
	CallTimeout    time.Duration // per tools/call; if zero, 60s

	RestartOnCrash bool
	MaxRestarts    int  // failed starts in a row retried (a healthy run's crash is none); zero means no restart
	Lazy           bool // start on first use instead of at Start
	// LazyList is LazyListStart or LazyListCached; "" means LazyListStart.
	// It only matters when Lazy is set.
	LazyList string `json:",omitempty"`
	// IdleTimeout stops a lazy server that had no request for this long
	// and none in flight; it goes back to idle and the next call starts it
	// again. If zero, or when Lazy is not set, it runs until closed.
	IdleTimeout time.Duration `json:",omitempty"`

	// Roots are the roots offered to the server when it asks (roots/list);
	// nil: the roots capability is not advertised. ClientRoots instead
	// forwards the one downstream client's roots (an instance of its own,
	// isolation per-client), through the Peer.
	Roots       []*mcp.Root `json:",omitempty"`
	ClientRoots bool        `json:",omitempty"`

	BreakerFailures int           // consecutive failures that open the breaker; if zero, 5
	BreakerOpen     time.Duration // open period before a half-open probe; if zero, 30s

	// SkipResources leaves out resources/list and resources/templates/list,
	// SkipPrompts prompts/list: the server's resources or prompts are not
	// exposed, so they are never asked for (nor can their failure leave the
	// catalog partial). A change applies at once, with a new listing.
	SkipResources bool `json:",omitempty"`
	SkipPrompts   bool `json:",omitempty"`

	// BackoffInitial is the first restart delay, doubled at each further
	// failed start in a row up to BackoffMax; if zero, 1s and 30s.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
}

// Fingerprint hashes exactly the fields whose change needs a new process or
// session: how to start or reach the server, and what it is offered at
// initialize. Specs with equal fingerprints share a Handle: a reload keeps
// it and applies the rest (timeouts, restart policy, breaker, laziness) in
// place with Update.
func (s Spec) Fingerprint() string {
	b, err := json.Marshal(struct {
		Name, Transport, Command string
		Args                     []string
		Env                      map[string]string
		Dir, URL                 string
		Headers                  map[string]string
		Protocol                 string
		Roots                    []*mcp.Root
		ClientRoots              bool
		// Unset, they leave the fingerprints of earlier versions unchanged.
		FollowRedirects string          `json:",omitempty"`
		EgressAllow     []OriginPattern `json:",omitempty"`
		OAuth           *oauth.Config   `json:",omitempty"`
	}{s.Name, s.Transport, s.Command, s.Args, s.Env, s.Dir, s.URL, s.Headers, s.Protocol, s.Roots, s.ClientRoots,
		s.FollowRedirects, s.EgressAllow, s.OAuth})
	if err != nil {
		panic("upstream: spec fingerprint: " + err.Error()) // only plain data
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

func (s Spec) connectTimeout() time.Duration {
	if s.ConnectTimeout <= 0 {
		return 30 * time.Second
	}
	return s.ConnectTimeout
}

func (s Spec) callTimeout() time.Duration {
	if s.CallTimeout <= 0 {
		return 60 * time.Second
	}
	return s.CallTimeout
}

// remote reports whether the server is reached over the network rather
// than run as a child.
func (s Spec) remote() bool { return s.Transport != TransportStdio }

func (s Spec) protocolVersion() string {
	switch s.Protocol {
	case "auto":
		return ""
	case "":
		if s.Transport == TransportStdio {
			return "2025-11-25"
		}
		return ""
	}
	return s.Protocol
}
