package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The 2026-07-28 protocol (SEP-2575) has no session: a request names its
// protocol version, the client's capabilities and info, and the log level
// it wants in params._meta. Such a request is dispatched through the same
// Methods table as a legacy one; its era is the session state for that one
// request, and nothing of it outlives the request. A request without the
// version in _meta is legacy and uses the session's state.

// Modern is the stateless protocol version.
const Modern = "2026-07-28"

// ModernVersions are the stateless protocol versions a request may name.
var ModernVersions = []string{Modern}

// AllVersions are every version served, newest first: what server/discover
// lists and what a request naming an unknown version is told.
var AllVersions = slices.Concat(ModernVersions, Versions)

// era is what one 2026-07-28 request brings in its _meta.
type era struct {
	version string
	caps    *mcp.ClientCapabilities
	info    *mcp.Implementation
	level   mcp.LoggingLevel
}

// modernOf reads a request's _meta: nil for a legacy request (no protocol
// version of 2026-07-28 or later in it), or the request's era, or an
// error naming the _meta field that is missing or invalid. pk is what the
// transport read of params already (nil: nothing); params are read only
// when the version's key is in them at all.
func modernOf(params json.RawMessage, pk *Peek) (*era, *jsonrpc.Error) {
	if pk == nil {
		if !bytes.Contains(params, []byte(mcp.MetaKeyProtocolVersion)) {
			return nil, nil
		}
		pk = new(Peek)
		if PeekParams(params, pk) != nil {
			return nil, nil // not an object with _meta: the handler says what is wrong
		}
	}
	var e era
	var ok bool
	if e.version, ok = pk.Version(); !ok || e.version < Modern {
		return nil, nil
	}
	if !slices.Contains(ModernVersions, e.version) {
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: AllVersions, Requested: e.version})
		return nil, &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion,
			Message: fmt.Sprintf("protocol version %q is not supported (supported: %v)", e.version, AllVersions), Data: data}
	}
	var jerr *jsonrpc.Error
	if e.caps, e.info, jerr = clients.of(pk.Meta.Caps, pk.Meta.Info); jerr != nil {
		return nil, jerr
	}
	if level := pk.Meta.Level; len(level) > 0 {
		l, ok := String(level)
		if e.level = mcp.LoggingLevel(l); !ok || LevelRank(e.level) == len(levels) {
			return nil, invalid(mcp.MetaKeyLogLevel)
		}
	}
	return &e, nil
}

// invalid is the error of a _meta field that is missing or invalid.
func invalid(key string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", key)}
}

// clientCache keeps the decoded capabilities and info of the clients seen
// lately: a client sends the same ones with every 2026-07-28 request, and
// decoding them (two passes with reflection) was a tenth of such a
// request's CPU. What it returns is shared: read only.
type clientCache struct {
	m    sync.Map // key → *clientDecoded
	n    atomic.Int32
	last atomic.Pointer[clientDecoded] // the one found last: most processes serve one client
}

type clientDecoded struct {
	key  string // string(caps) + "\x00" + string(info): JSON has no raw NUL
	caps *mcp.ClientCapabilities
	info *mcp.Implementation
}

// is reports whether d was decoded from rawCaps and rawInfo, without
// building their key.
func (d *clientDecoded) is(rawCaps, rawInfo json.RawMessage) bool {
	n := len(rawCaps)
	return len(d.key) == n+1+len(rawInfo) && d.key[:n] == string(rawCaps) && d.key[n] == 0 && d.key[n+1:] == string(rawInfo)
}

// Bounds of clientCache: entries, and the bytes of one key. Past them, a
// client's capabilities are decoded on every request.
const (
	maxClientCache    = 256
	maxClientCacheKey = 4 << 10
)

var clients clientCache

// of returns the capabilities and info a request's _meta carries, decoded.
func (c *clientCache) of(rawCaps, rawInfo json.RawMessage) (*mcp.ClientCapabilities, *mcp.Implementation, *jsonrpc.Error) {
	if d := c.last.Load(); d != nil && d.is(rawCaps, rawInfo) {
		return d.caps, d.info, nil
	}
	cacheable := len(rawCaps)+len(rawInfo) < maxClientCacheKey
	var key string
	if cacheable {
		key = string(rawCaps) + "\x00" + string(rawInfo)
		if d, ok := c.m.Load(key); ok {
			d := d.(*clientDecoded)
			c.last.Store(d)
			return d.caps, d.info, nil
		}
	}
	caps, ok := decodeCaps(rawCaps)
	if !ok {
		return nil, nil, invalid(mcp.MetaKeyClientCapabilities)
	}
	var info *mcp.Implementation
	if len(rawInfo) > 0 {
		if json.Unmarshal(rawInfo, &info) != nil || info == nil {
			return nil, nil, invalid(mcp.MetaKeyClientInfo)
		}
	}
	if cacheable && c.n.Load() < maxClientCache {
		d := &clientDecoded{key, caps, info}
		if _, loaded := c.m.LoadOrStore(key, d); !loaded {
			c.n.Add(1)
			c.last.Store(d)
		}
	}
	return caps, info, nil
}

// decodeCaps decodes client capabilities, an object. The SDK's type keeps
// the roots capability in a field JSON does not fill (RootsV2, its fix of
// go-sdk#607): it is read beside it.
func decodeCaps(raw json.RawMessage) (*mcp.ClientCapabilities, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var caps mcp.ClientCapabilities
	var roots struct {
		Roots *mcp.RootCapabilities `json:"roots"`
	}
	if json.Unmarshal(raw, &caps) != nil || json.Unmarshal(raw, &roots) != nil {
		return nil, false
	}
	caps.RootsV2 = roots.Roots
	return &caps, true
}

// removedMethods are the legacy methods 2026-07-28 has no more.
var removedMethods = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
}

// dispatchModern answers a 2026-07-28 request: no initialize gate, the
// protocol's own methods of that era, every other method from the table.
func (p *protocol) dispatchModern(ctx context.Context, r *Request) (any, error) {
	switch {
	case removedMethods[r.Method]:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not part of protocol %s", r.Method, r.era.version)}
	case r.Method == "server/discover":
		if p.offerModern != nil && !p.offerModern(r.Session, r.era.caps) {
			return p.discover(ctx, r.Session, r.era.caps, Versions), nil
		}
		return p.discover(ctx, r.Session, r.era.caps, AllVersions), nil
	}
	h := p.methods[r.Method]
	if h == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", r.Method)}
	}
	return h(ctx, r)
}

// discover is the server/discover answer listing versions.
func (p *protocol) discover(ctx context.Context, s *Session, client *mcp.ClientCapabilities, versions []string) *mcp.DiscoverResult {
	return &mcp.DiscoverResult{SupportedVersions: versions, Capabilities: p.capsFor(ctx, s, client), Instructions: p.instructions}
}

// Cache is what a 2026-07-28 answer says about caching it (SEP-2549).
type Cache struct {
	// TTL is ttlMs: how long a client may keep the answer.
	TTL int
	// Private is true where the answer depends on who asks (a token or an
	// agent's view): cacheScope "private", never shared across
	// authorization contexts.
	Private bool
}

// modernResult prepares a 2026-07-28 answer: it names switchboard as its
// server, and lists, reads and discover say how they may be cached. A read keeps its upstream's shorter TTL and a
// private scope.
func (p *protocol) modernResult(res any) {
	scope := "public"
	if p.cache.Private {
		scope = "private"
	}
	c := mcp.Cacheable{TTLMs: p.cache.TTL, CacheScope: scope}
	// SEP-2575: a result names its server in _meta (a copy: the map may
	// be the upstream's).
	if r, ok := res.(interface {
		GetMeta() map[string]any
		SetMeta(map[string]any)
	}); ok && p.info != nil {
		m := maps.Clone(r.GetMeta())
		if m == nil {
			m = map[string]any{}
		}
		m[mcp.MetaKeyServerInfo] = serverInfoJSON(p.info)
		r.SetMeta(m)
	}
	switch v := res.(type) {
	case *mcp.ListToolsResult:
		v.Cacheable = c
	case *mcp.ListPromptsResult:
		v.Cacheable = c
	case *mcp.ListResourcesResult:
		v.Cacheable = c
	case *mcp.ListResourceTemplatesResult:
		v.Cacheable = c
	case *mcp.DiscoverResult:
		v.Cacheable = c
	case *mcp.ReadResourceResult:
		if v.CacheScope == "private" {
			c.CacheScope = "private"
		}
		if v.TTLMs > 0 && v.TTLMs < c.TTLMs {
			c.TTLMs = v.TTLMs
		}
		v.Cacheable = c
	}
}

// encodedInfo is a server's Implementation and its encoding.
type encodedInfo struct {
	info *mcp.Implementation
	raw  json.RawMessage
}

// lastInfo is the last server info encoded: every session of a process
// has the same, and its encoding need not be worked out per answer.
var lastInfo atomic.Pointer[encodedInfo]

// ServerInfo is the server's info encoded, as a 2026-07-28 answer names
// it in _meta: for a handler that writes such an answer itself. nil for a
// legacy request, and when the session has no ServerInfo.
func (r *Request) ServerInfo() json.RawMessage {
	if r.era == nil || r.Session.opt.ServerInfo == nil {
		return nil
	}
	return serverInfoJSON(r.Session.opt.ServerInfo)
}

// serverInfoJSON is info encoded; it must not change once given.
func serverInfoJSON(info *mcp.Implementation) json.RawMessage {
	if e := lastInfo.Load(); e != nil && e.info == info {
		return e.raw
	}
	raw, err := json.Marshal(info)
	if err != nil {
		return nil // a name, a version, a few strings: it always encodes
	}
	lastInfo.Store(&encodedInfo{info, raw})
	return raw
}

// completeType marks an encoded 2026-07-28 result complete. switchboard's
// results carry no resultType but an upstream's "input_required" (the
// boundary keeps an upstream's "complete" out of them), so it goes first.
// A result its handler wrote with the type first already (a forwarded
// call's text, on the hot path) is left as it is: no copy.
func completeType(raw json.RawMessage) json.RawMessage {
	const key = `"resultType":"complete"`
	if len(raw) < 2 || raw[0] != '{' || bytes.HasPrefix(raw, []byte(`{"resultType":`)) ||
		bytes.HasSuffix(raw, []byte(`"resultType":"input_required"}`)) {
		return raw // typed already: the SDK's types put a resultType they hold last
	}
	out := make([]byte, 0, len(raw)+len(key)+1)
	out = append(out, '{')
	out = append(out, key...)
	if rest := bytes.TrimSpace(raw[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, raw[1:]...)
}

// modernError is an error as a 2026-07-28 client expects it: resource not
// found is invalid params there.
func modernError(we *jsonrpc.Error) *jsonrpc.Error {
	if we.Code == codeResourceNotFound {
		cp := *we
		cp.Code = jsonrpc.CodeInvalidParams
		return &cp
	}
	return we
}

// codeResourceNotFound is the legacy resource-not-found code.
const codeResourceNotFound = -32002

// Listen serves subscriptions/listen: the request's stream becomes the
// session's own stream, for the notifications admit lets through, each
// marked as the request's subscription, until ctx ends or the session
// closes. The acknowledgement (params of
// notifications/subscriptions/acknowledged) goes first. The session's own
// stream before is restored after.
func (r *Request) Listen(ctx context.Context, ack any, admit func(method string) bool) error {
	s := r.Session
	prev := s.outbound.out.Load()
	// What is announced once the stream is the session's waits for the
	// acknowledgement to be out: from then on, nothing is missed.
	ls := &listenStream{out: r.out, id: r.ID, admit: admit, acked: make(chan struct{})}
	s.SetStream(ls)
	s.listens.Add(1)
	defer func() {
		s.listens.Add(-1)
		s.outbound.out.Store(prev)
	}()
	raw, err := encode(ack)
	if err == nil {
		err = ls.send(ctx, &jsonrpc.Request{Method: "notifications/subscriptions/acknowledged", Params: raw})
	}
	close(ls.acked)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.done:
	}
	return nil
}

// listenStream is a subscriptions/listen request's stream as a session's
// own stream.
type listenStream struct {
	out   Stream
	id    jsonrpc.ID
	admit func(method string) bool
	acked chan struct{} // closed once the acknowledgement was written
}

// Write implements Stream: an admitted notification, its _meta naming the
// subscription; nothing else.
func (l *listenStream) Write(ctx context.Context, msg jsonrpc.Message) error {
	n, ok := msg.(*jsonrpc.Request)
	if !ok || n.IsCall() || !l.admit(n.Method) {
		return nil
	}
	<-l.acked // written by the goroutine that set the stream, at once
	return l.send(ctx, n)
}

// send writes a notification with its _meta naming the subscription.
func (l *listenStream) send(ctx context.Context, n *jsonrpc.Request) error {
	params := map[string]json.RawMessage{}
	if len(n.Params) > 0 && json.Unmarshal(n.Params, &params) != nil {
		return fmt.Errorf("%s: params are not an object", n.Method)
	}
	meta := map[string]any{}
	if raw, ok := params["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	meta[mcp.MetaKeySubscriptionID] = l.id.Raw()
	raw, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	params["_meta"] = raw
	if raw, err = json.Marshal(params); err != nil {
		return err
	}
	return l.out.Write(ctx, &jsonrpc.Request{Method: n.Method, Params: raw})
}
