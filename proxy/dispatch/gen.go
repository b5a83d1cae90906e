package dispatch

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
)

// Gen is everything switchboard serves at one moment: one config
// generation and, per view, the routes built from it and from the
// upstreams' catalogs. It is immutable once published, and published whole
// (Serving): a reload swaps config, routes, policy, limiters, sanitize
// options, handles and access at once, and each request acquires it once
// and uses only what it acquired.
type Gen struct {
	Snap  *view.Snapshot
	Views map[string]*view.View // by view id; "" is the default view
	Notes *view.Notes           // what building the views found, for /status
	// Access is who may use it: the downstream tokens and the admin
	// reload token, resolved from Snap's config.
	Access Access
	// Observers are what its requests report to; a reload that changes
	// them closes the old ones once their generations drained.
	Observers

	// refs counts the requests using this generation; once it is replaced
	// (retired) and refs reaches zero, drained closes. Handles a reload
	// removes are stopped only after every older generation drained.
	refs    atomic.Int64
	retired atomic.Bool
	once    sync.Once
	drained chan struct{}
}

// Observers are telemetry and the audit log (Audit nil: off).
type Observers struct {
	Tel   *telemetry.Telemetry
	Audit *AuditLog
}

// NewGen makes a generation of snap's views.
func NewGen(snap *view.Snapshot, views map[string]*view.View, acc Access, obs Observers) *Gen {
	return &Gen{Snap: snap, Views: views, Notes: view.GatherNotes(views), Access: acc, Observers: obs, drained: make(chan struct{})}
}

// Drained is closed once the generation was replaced and its last request
// released it.
func (g *Gen) Drained() <-chan struct{} { return g.drained }

// Serving holds the generation served now, and the replaced ones still in
// use.
type Serving struct {
	cur      atomic.Pointer[Gen]
	mu       sync.Mutex
	draining []*Gen // replaced generations not yet drained
}

// NewServing serves g.
func NewServing(g *Gen) *Serving {
	s := &Serving{}
	s.cur.Store(g)
	return s
}

// Load is the generation served now, for what reads it once and keeps
// nothing of it: a request uses Acquire.
func (s *Serving) Load() *Gen { return s.cur.Load() }

// Swap serves next and retires the generation it replaces. It returns
// every replaced generation not yet drained, for a retire of handles to
// wait on.
func (s *Serving) Swap(next *Gen) []*Gen {
	old := s.cur.Swap(next)
	old.retire()
	s.mu.Lock()
	defer s.mu.Unlock()
	live := make([]*Gen, 0, len(s.draining)+1)
	for _, g := range append(s.draining, old) {
		select {
		case <-g.drained:
		default:
			live = append(live, g)
		}
	}
	s.draining = live
	return live
}

// Acquire loads the current generation and counts the caller in it until
// Release. A generation counted is never drained under its user: the count
// is taken before the generation is retired, or taken again on the newer one.
func (s *Serving) Acquire() *Gen {
	for {
		g := s.cur.Load()
		g.refs.Add(1)
		if s.cur.Load() == g {
			return g
		}
		g.Release() // replaced meanwhile: use the newer one
	}
}

type genKey struct{}

// Held is a request's context that holds a generation: one allocation per
// request for both the context and the count.
type Held struct {
	context.Context
	g    *Gen
	done atomic.Bool // released (or never counted: carry)
	// Principal is who the request is, once authenticated (package
	// edge): it rides on the same context.
	Principal Principal
	// Credential is the identity provider's access token the request
	// showed (auth.oauth; "" otherwise), for a server whose grant
	// exchanges it (forCaller). It lives as long as the request and is
	// never logged or sent upstream itself.
	Credential string
}

// HeldIn is the hold ctx carries, or nil.
func HeldIn(ctx context.Context) *Held {
	h, _ := ctx.Value(genKey{}).(*Held)
	return h
}

// Value implements context.Context: the hold is found under genKey.
func (h *Held) Value(key any) any {
	if key == (genKey{}) {
		return h
	}
	return h.Context.Value(key)
}

// Release ends the hold (once); a handler that outlasts its answer
// (subscriptions/listen) ends it early (letGo).
func (h *Held) Release() {
	if h.done.CompareAndSwap(false, true) {
		h.g.Release()
	}
}

// Hold acquires the current generation for one request and returns the
// request's context, which carries it: everything that serves the request
// uses it (acquireFor), from its authentication to its answer.
func (s *Serving) Hold(ctx context.Context) *Held {
	return &Held{Context: ctx, g: s.Acquire()}
}

// GenOf is the generation ctx carries (Hold), or nil.
func GenOf(ctx context.Context) *Gen {
	if h := HeldIn(ctx); h != nil {
		return h.g
	}
	return nil
}

// carry puts g, which a handler acquired, in ctx for what serves the
// request below it; the handler keeps the count (letGo ends nothing).
func carry(ctx context.Context, g *Gen) context.Context {
	if GenOf(ctx) == g {
		return ctx
	}
	h := &Held{Context: ctx, g: g}
	h.done.Store(true)
	return h
}

// genOr is the generation ctx carries, or outside a request the one
// served now.
func (s *Serving) genOr(ctx context.Context) *Gen {
	if g := GenOf(ctx); g != nil {
		return g
	}
	return s.Load()
}

// letGo ends the hold of ctx's generation before its request ends.
func letGo(ctx context.Context) {
	if h := HeldIn(ctx); h != nil {
		h.Release()
	}
}

// acquireFor counts a request's handler in the generation its context
// carries, or without one (stdio) in the current one. A request answered
// after its POST ended (legacy SSE) may find the generation it carries
// drained, replaced meanwhile: it is served by the current one.
func (s *Serving) acquireFor(ctx context.Context) *Gen {
	if g := GenOf(ctx); g != nil && g.retain() {
		return g
	}
	return s.Acquire()
}

// retain counts one more use of a generation a caller got from Acquire,
// unless it already drained. A count above one means another use holds it
// (not drained); a first count on a generation not yet retired holds it
// before any drain, as Acquire's does.
func (g *Gen) retain() bool {
	if g.refs.Add(1) > 1 || !g.retired.Load() {
		return true
	}
	g.Release()
	return false
}

// Release ends a use that Acquire counted.
func (g *Gen) Release() {
	if g.refs.Add(-1) == 0 {
		g.drainIfIdle()
	}
}

// retire marks a replaced generation; drained closes once its last
// request released it.
func (g *Gen) retire() {
	g.retired.Store(true)
	g.drainIfIdle()
}

// drainIfIdle closes drained when the generation is retired and unused.
// The count is read after the retired mark: a zero seen before it may
// since have gained a request that took the generation while it was still
// current. After the mark no request can take it any more (acquire's
// second load fails), so a zero read then is final.
func (g *Gen) drainIfIdle() {
	if g.retired.Load() && g.refs.Load() == 0 {
		g.once.Do(func() { close(g.drained) })
	}
}
