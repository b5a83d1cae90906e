package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Versions are the protocol versions a session negotiates at initialize,
// newest first: those with the initialize handshake.
var Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Negotiate is the version initialize answers a client that requested
// requested: that one if the session speaks it, else the newest.
func Negotiate(requested string) string {
	if slices.Contains(Versions, requested) {
		return requested
	}
	return Versions[0]
}

// protocol is a session's side of the protocol: what initialize settled
// and the log level the client set, the protocol's own methods that set
// them (initialize, logging/setLevel, ping, server/discover), the dispatch
// of every other method to the Methods table, and how a 2026-07-28 answer
// is shaped (modern.go). It is safe for concurrent use.
type protocol struct {
	methods      Methods
	info         *mcp.Implementation // Options.ServerInfo
	caps         *mcp.ServerCapabilities
	extensions   func(context.Context, *Session, *mcp.ClientCapabilities) map[string]any
	instructions string
	cache        Cache
	offerModern  func(*Session, *mcp.ClientCapabilities) bool
	onLevel      func(*Session, mcp.LoggingLevel)

	mu    sync.Mutex
	hello negotiated
	level mcp.LoggingLevel
}

// negotiated is what initialize settled (or what a resumed session
// brings of it).
type negotiated struct {
	initialized bool
	version     string
	clientInfo  *mcp.Implementation
	clientCaps  *mcp.ClientCapabilities
}

// state is what initialize settled so far.
func (p *protocol) state() negotiated {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hello
}

// logLevel is the level the client asked for ("": none).
func (p *protocol) logLevel() mcp.LoggingLevel {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.level
}

// wantsLog reports whether the client asked for log messages of level l.
func (p *protocol) wantsLog(l mcp.LoggingLevel) bool {
	want := p.logLevel()
	return want != "" && LevelRank(l) >= LevelRank(want)
}

// dispatch answers a request: the protocol's own methods here, every
// other from the table.
func (p *protocol) dispatch(ctx context.Context, r *Request) (any, error) {
	if r.era != nil {
		return p.dispatchModern(ctx, r)
	}
	switch r.Method {
	case "initialize":
		return p.initialize(ctx, r)
	case "ping":
		return json.RawMessage("{}"), nil
	case "server/discover":
		// A session is legacy: it lists the versions with a handshake, and
		// a 2026-07-28 client falls back to initialize.
		return p.discover(ctx, r.Session, nil, Versions), nil
	}
	if !p.state().initialized {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("method %q is invalid during session initialization", r.Method)}
	}
	if r.Method == "logging/setLevel" {
		return p.setLevel(r)
	}
	h := p.methods[r.Method]
	if h == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", r.Method)}
	}
	return h(ctx, r)
}

// initialize answers initialize and settles the session's version and
// what the client declared.
func (p *protocol) initialize(ctx context.Context, r *Request) (any, error) {
	var params mcp.InitializeParams
	var raw struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(r.Params, &params); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "initialize: " + err.Error()}
	}
	if params.Capabilities != nil && json.Unmarshal(r.Params, &raw) == nil {
		if caps, ok := decodeCaps(raw.Capabilities); ok { // with roots (see decodeCaps)
			params.Capabilities = caps
		}
	}
	version := Negotiate(params.ProtocolVersion)
	p.mu.Lock()
	p.hello = negotiated{initialized: true, version: version, clientInfo: params.ClientInfo, clientCaps: params.Capabilities}
	p.mu.Unlock()
	info := p.info
	if info == nil {
		info = &mcp.Implementation{Name: "switchboard"}
	}
	return &mcp.InitializeResult{ProtocolVersion: version, Capabilities: p.capsFor(ctx, r.Session, params.Capabilities), ServerInfo: info, Instructions: p.instructions}, nil
}

// capsFor are the capabilities declared to s, whose client declared
// client: the fixed ones, with the extensions of its view's servers.
func (p *protocol) capsFor(ctx context.Context, s *Session, client *mcp.ClientCapabilities) *mcp.ServerCapabilities {
	if p.extensions == nil || p.caps == nil {
		return p.caps
	}
	ext := p.extensions(ctx, s, client)
	if len(ext) == 0 {
		return p.caps
	}
	caps := *p.caps
	caps.Extensions = ext
	return &caps
}

// setLevel answers logging/setLevel.
func (p *protocol) setLevel(r *Request) (any, error) {
	var params mcp.SetLoggingLevelParams
	if err := json.Unmarshal(r.Params, &params); err != nil || LevelRank(params.Level) == len(levels) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("logging/setLevel: unknown level %q", params.Level)}
	}
	p.mu.Lock()
	p.level = params.Level
	p.mu.Unlock()
	if p.onLevel != nil {
		p.onLevel(r.Session, params.Level)
	}
	return json.RawMessage("{}"), nil
}

// levels are the MCP log levels, least severe first.
var levels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LevelRank orders log levels; an unknown level ranks after every known one.
func LevelRank(l mcp.LoggingLevel) int {
	for i, x := range levels {
		if x == l {
			return i
		}
	}
	return len(levels)
}

// ElicitMode is the mode of an elicitation: its own, else "url" when it
// names a URL or an elicitation ID, else "form" (as the SDK infers it).
func ElicitMode(p *mcp.ElicitParams) string {
	switch {
	case p.Mode != "":
		return p.Mode
	case p.URL != "" || p.ElicitationID != "":
		return "url"
	}
	return "form"
}

// CanElicit reports whether a client that declared caps takes an
// elicitation in mode. An elicitation capability that names no mode is
// form mode only (the specification's compatibility rule); URL mode must
// be declared.
func CanElicit(caps *mcp.ClientCapabilities, mode string) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	if mode == "url" {
		return e.URL != nil
	}
	return e.Form != nil || e.URL == nil
}
