package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// Interface guards: the proxy is every upstream's Peer, and each forwarded
// call's Sink.
var (
	_ upstream.Peer = (*peer)(nil)
	_ upstream.Sink = (*callSink)(nil)
)

// peer routes what upstreams send outside any call: log messages to the
// sessions of the views that expose the upstream (or the one session of a
// per-client instance), resource updates to the subscribed sessions, and
// server→client requests of a per-client instance to its session. Requests
// a shared upstream makes outside a single call are refused, never left
// hanging: there is no one client they could belong to.
type peer struct {
	log      hclog.Logger
	trust    *trust
	serving  *Serving
	sessions *sessionTable
	clients  *clientHandles
	// oneClient: a shared server's requests go to the one session (stdio).
	oneClient bool

	subMu sync.Mutex
	subs  map[subKey]int // upstream subscriptions, ref-counted over downstream sessions
}

type subKey struct {
	h   *upstream.Handle
	uri string
}

// callSink is one forwarded request's Sink: what the upstream sends about
// the request goes to the session that made it, on the request's own
// stream (ctx carries it), in the order the upstream sent it. The upstream
// connection hands everything on before the request returns, so the
// answer is written after it.
type callSink struct {
	t     *trust
	req   *session.Request
	token any // the downstream progress token, exactly as the client sent it
	// src and opts are the trust boundary's for the request's server.
	src  sanitize.Source
	opts sanitize.Options
}

// A call's sink takes what the upstream sends about the call, and tells a
// 2026-07-28 server and the HTTP transport what they ask of its caller.
var (
	_ upstream.Sink       = (*callSink)(nil)
	_ upstream.Pauser     = (*callSink)(nil)
	_ upstream.LogLeveler = (*callSink)(nil)
	_ upstream.Capable    = (*callSink)(nil)
)

func newCallSink(t *trust, req *session.Request, token any, src sanitize.Source, opts sanitize.Options) *callSink {
	return &callSink{t: t, req: req, token: token, src: src, opts: opts}
}

// Owner implements upstream.Sink.
func (s *callSink) Owner() any { return s.req.Session }

// Pause implements upstream.Pauser: the upstream closed the call's stream
// to be polled, and so does switchboard with its client's.
func (s *callSink) Pause(retry time.Duration) { s.req.Pause(retry) }

// LogLevel implements upstream.LogLeveler: a 2026-07-28 server is told the
// level of the request it serves.
func (s *callSink) LogLevel() mcp.LoggingLevel { return s.req.LogLevel() }

// ClientCapabilities implements upstream.Capable: a 2026-07-28 server asks
// only for input the client can give.
func (s *callSink) ClientCapabilities() *mcp.ClientCapabilities { return s.req.ClientCapabilities() }

// Notify implements upstream.Sink.
func (s *callSink) Notify(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		var n mcp.ProgressNotificationParams
		if s.token == nil || json.Unmarshal(params, &n) != nil {
			return
		}
		out, rep := sanitize.Progress(&n, s.opts)
		s.t.noteFindings(ctx, s.src.Server, s.src.Tool+s.src.Prompt, rep)
		if out == nil {
			return // withheld
		}
		out.ProgressToken = s.token
		_ = s.req.Notify(ctx, method, out)
	case "notifications/message":
		if msg := s.t.logMessage(ctx, params, s.src, s.opts); msg != nil {
			_ = s.req.Log(ctx, msg)
		}
	}
}

// Request implements upstream.Sink.
func (s *callSink) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	// A 2026-07-28 call asks through its parked call (package mrtr); a call
	// that cannot be parked gets session.ErrModernAsk.
	return s.t.askClient(ctx, s.req.ClientCapabilities(), s.req.Ask, method, params, s.src, s.opts)
}

// boundaryOf is the trust boundary's source and options for what handle h
// sends outside a request: those of the server entry it runs, in the
// current snapshot (a per-client instance: its server's).
func (pr *peer) boundaryOf(h *upstream.Handle) (sanitize.Source, sanitize.Options) {
	snap := pr.serving.Load().Snap
	src := sanitize.Source{Server: h.Name()}
	if snap == nil {
		return src, sanitize.Options{Wrap: true, Redactor: pr.trust.redactor}
	}
	var byName *view.ServerEntry
	for _, vs := range snap.Views {
		for _, e := range vs.Servers {
			if e.Handle == h {
				src.Server = e.Key
				return src, pr.trust.options(snap, e)
			}
			if e.Key == h.Name() && byName == nil {
				byName = e
			}
		}
	}
	if byName != nil {
		return src, pr.trust.options(snap, byName)
	}
	opts := snap.Sanitize
	opts.Wrap, opts.Redactor = true, pr.trust.redactor
	return src, opts
}

// Notify implements upstream.Peer.
func (pr *peer) Notify(h *upstream.Handle, method string, params json.RawMessage) {
	switch method {
	case "notifications/message":
		src, opts := pr.boundaryOf(h)
		msg := pr.trust.logMessage(context.Background(), params, src, opts)
		if msg == nil {
			return
		}
		pr.log.Debug("upstream log message", "upstream", h.Name(), "state", string(msg.Level))
		if ss := pr.clients.sessionOf(h); ss != nil {
			_ = ss.Log(context.Background(), msg)
			return
		}
		// Outside any call: the sessions of the views that expose the
		// upstream, each filtered by the level it asked for; encoded once
		// for them all.
		raw, err := json.Marshal(msg)
		if err != nil {
			return
		}
		pr.eachSessionExposing(h, func(ss *session.Session, _ *view.ServerEntry) {
			_ = ss.LogEncoded(msg.Level, raw)
		})
	case "notifications/resources/updated":
		var n mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(params, &n) != nil {
			return
		}
		// The subscription is on the URI as the upstream sent it; what
		// goes down passes the trust boundary.
		_, opts := pr.boundaryOf(h)
		out, rep := sanitize.ResourceUpdated(&n, opts)
		pr.trust.noteFindings(context.Background(), h.Name(), "", rep)
		if out == nil {
			return
		}
		// Only the sessions that subscribed to the URI, as their client
		// names it (a ui:// URI by its public form).
		pr.eachSessionExposing(h, func(ss *session.Session, e *view.ServerEntry) {
			sent := out
			if router.IsAppURI(out.URI) {
				cp := *out
				cp.URI = router.AppURI(e.Prefix, out.URI)
				sent = &cp
			}
			if ss.Subscribed(sent.URI) {
				_ = ss.Notify(context.Background(), method, sent)
			}
		})
	}
}

// Request implements upstream.Peer: only a per-client instance's requests
// have a session to go to, and with one client (stdio) every server's.
func (pr *peer) Request(ctx context.Context, h *upstream.Handle, method string, params json.RawMessage) (json.RawMessage, error) {
	ss := pr.clients.sessionOf(h)
	if ss == nil && pr.oneClient {
		var err error
		if ss, err = pr.soleSession(h, method); err != nil {
			return nil, err
		}
	}
	if ss == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("switchboard cannot route %s from server '%s': it needs exactly one of the server's calls in flight (set isolation: per-client)", method, h.Name())}
	}
	src, opts := pr.boundaryOf(h)
	return pr.trust.askClient(ctx, ss.ClientCapabilities(), ss.Ask, method, params, src, opts)
}

// eachSessionExposing calls f for every session whose view serves h now,
// with the view's entry for h.
func (pr *peer) eachSessionExposing(h *upstream.Handle, f func(ss *session.Session, e *view.ServerEntry)) {
	snap := pr.serving.Load().Snap
	if snap == nil {
		return
	}
	exposed := map[string]*view.ServerEntry{}
	for id, vs := range snap.Views {
		if e := vs.Entry(h); e != nil {
			exposed[id] = e
		}
	}
	pr.sessions.each(func(ss *session.Session, viewID string) {
		if e := exposed[viewID]; e != nil {
			f(ss, e)
		}
	})
}

// subscribe ref-counts a downstream subscription and subscribes upstream on
// the first one.
func (pr *peer) subscribe(ctx context.Context, h *upstream.Handle, uri string) error {
	pr.subMu.Lock()
	k := subKey{h, uri}
	pr.subs[k]++
	first := pr.subs[k] == 1
	pr.subMu.Unlock()
	if !first {
		return nil
	}
	if err := h.Subscribe(ctx, uri); err != nil {
		pr.subMu.Lock()
		pr.subs[k]--
		if pr.subs[k] <= 0 {
			delete(pr.subs, k)
		}
		pr.subMu.Unlock()
		return err
	}
	return nil
}

// unsubscribe ends the upstream subscription with the last downstream one.
func (pr *peer) unsubscribe(ctx context.Context, h *upstream.Handle, uri string) error {
	pr.subMu.Lock()
	k := subKey{h, uri}
	if pr.subs[k] == 0 {
		pr.subMu.Unlock()
		return nil
	}
	pr.subs[k]--
	last := pr.subs[k] == 0
	if last {
		delete(pr.subs, k)
	}
	pr.subMu.Unlock()
	if last {
		return h.Unsubscribe(ctx, uri)
	}
	return nil
}
