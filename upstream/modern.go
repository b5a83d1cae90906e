package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol 2026-07-28 upstream (SEP-2575): no initialize and no session.
// switchboard asks server/discover; a server that lists 2026-07-28 is
// spoken to in that protocol: every request carries the protocol version,
// the client's capabilities and info (and the log level its caller wants)
// in _meta. The discover answer stands in for initialize's (capabilities,
// instructions). The server asks for input in its results (input_required),
// which the caller relays (see the proxy); it sends no requests and no log
// messages outside a request.

// Modern is the stateless protocol version switchboard speaks upstream.
const Modern = "2026-07-28"

// probeTimeout bounds the server/discover probe of an upstream whose era
// is not known: a legacy server may never answer it.
const probeTimeout = 5 * time.Second

// modernClient is the per-request _meta of a client speaking 2026-07-28.
type modernClient struct {
	info *mcp.Implementation
	caps *mcp.ClientCapabilities
}

// LogLeveler is a Sink that knows the log level its caller wants: a
// 2026-07-28 server is asked for log messages per request.
type LogLeveler interface {
	LogLevel() mcp.LoggingLevel
}

// Capable is a Sink that knows what its caller can answer (sampling,
// elicitation): a 2026-07-28 server asks for input only within it.
type Capable interface {
	ClientCapabilities() *mcp.ClientCapabilities
}

// meta is the _meta a request carries to a 2026-07-28 server, over what
// the params hold already.
func (m *modernClient) meta(have map[string]any, sink Sink) map[string]any {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]any{}
	}
	caps := m.caps
	if c, ok := sink.(Capable); ok {
		if cc := c.ClientCapabilities(); cc != nil {
			// Input goes back to the caller: only what it can answer is
			// declared, and the extensions it supports (roots stay the
			// operator's).
			cp := *caps
			cp.Sampling, cp.Elicitation, cp.Extensions = cc.Sampling, cc.Elicitation, cc.Extensions
			caps = &cp
		}
	}
	out[mcp.MetaKeyProtocolVersion] = Modern
	out[mcp.MetaKeyClientInfo] = m.info
	out[mcp.MetaKeyClientCapabilities] = capsV2(caps)
	if l, ok := sink.(LogLeveler); ok {
		if level := l.LogLevel(); level != "" {
			out[mcp.MetaKeyLogLevel] = level
		}
	}
	return out
}

// capsV2 is capabilities as 2026-07-28 spells them: roots in "roots" (the
// SDK's type keeps them in a field JSON does not write).
func capsV2(c *mcp.ClientCapabilities) map[string]any {
	out := map[string]any{}
	raw, _ := json.Marshal(c)
	_ = json.Unmarshal(raw, &out)
	delete(out, "roots")
	if c.RootsV2 != nil {
		out["roots"] = c.RootsV2
	}
	return out
}

// encodeFor encodes params for the client's server: a 2026-07-28 server's
// carry _meta.
func (c *client) encodeFor(params mcp.Params, sink Sink) (json.RawMessage, error) {
	m := c.modern.Load()
	if m == nil {
		return encodeParams(params)
	}
	if params == nil || reflect.ValueOf(params).IsNil() {
		return json.Marshal(map[string]any{"_meta": m.meta(nil, sink)})
	}
	params.SetMeta(m.meta(params.GetMeta(), sink))
	return encodeParams(params)
}

// discover probes the server: if it serves 2026-07-28, the client speaks
// it from now on, and discover's answer stands in for initialize's. A
// server that does not (an error, a list without the version) leaves the
// client as it was: legacy, to be initialized.
func (c *client) discover(ctx context.Context, info *mcp.Implementation, caps *mcp.ClientCapabilities) (bool, error) {
	m := &modernClient{info: info, caps: caps}
	raw, err := c.call(ctx, "server/discover", &mcp.DiscoverParams{Meta: m.meta(nil, nil)}, nil)
	if err != nil {
		return false, err
	}
	var res struct {
		mcp.DiscoverResult
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return false, fmt.Errorf("server/discover: decode result: %w", err)
	}
	if !slices.Contains(res.SupportedVersions, Modern) {
		return false, nil
	}
	ir := &mcp.InitializeResult{ProtocolVersion: Modern, Capabilities: res.Capabilities, Instructions: res.Instructions}
	if si, ok := res.Meta[mcp.MetaKeyServerInfo]; ok {
		b, _ := json.Marshal(si)
		_ = json.Unmarshal(b, &ir.ServerInfo)
	}
	if ir.Capabilities == nil {
		ir.Capabilities = &mcp.ServerCapabilities{}
	}
	c.init.Store(ir)
	c.modern.Store(m)
	return true, nil
}

// isModern reports whether the client speaks 2026-07-28 to its server.
func (c *client) isModern() bool { return c.modern.Load() != nil }

// modernRequest reports whether an encoded request is of protocol
// 2026-07-28 (its _meta names the version), for the HTTP transport's
// headers.
func modernRequest(params json.RawMessage) bool {
	return bytes.Contains(params, []byte(`"`+mcp.MetaKeyProtocolVersion+`":"`+Modern+`"`))
}

// listen opens subscriptions/listen for the list changes the server
// announces: they reach the hooks as a legacy server's do. It runs until
// the client closes.
func (c *client) listen() {
	caps := serverCaps(c)
	if caps == nil {
		return
	}
	n := mcp.NotificationSubscriptions{
		ToolsListChanged:     caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: caps.Resources != nil && caps.Resources.ListChanged,
	}
	if !n.ToolsListChanged && !n.PromptsListChanged && !n.ResourcesListChanged {
		return
	}
	c.spawn(func() {
		_, err := c.call(c.ctx, "subscriptions/listen", &mcp.SubscriptionsListenParams{Notifications: &n}, nil)
		if err != nil && c.ctx.Err() == nil {
			c.log.Warn("upstream list changes not heard", "error", err)
		}
	})
}
