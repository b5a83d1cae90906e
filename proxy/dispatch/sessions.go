package dispatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// Announce tells the sessions of each view which of its lists differ
// between before and after; a view that is gone lost all of them.
func (d *Dispatcher) Announce(before, after map[string]*view.View) {
	empty := (&view.View{}).Fingerprint()
	changed := map[string][]string{}
	for id, old := range before {
		now := empty
		if v := after[id]; v != nil {
			now = v.Hashes
		}
		changed[id] = view.ListChanges(old.Hashes, now)
	}
	for id, v := range after {
		if _, ok := before[id]; !ok {
			changed[id] = view.ListChanges(empty, v.Hashes)
		}
	}
	d.EachSession(func(ss *session.Session, viewID string) {
		if !ss.Announced() {
			return
		}
		for _, m := range changed[viewID] {
			_ = ss.Notify(context.Background(), m, nil)
		}
	})
}

// record is everything switchboard keeps for one downstream session,
// hung on the session itself (session.Options.Principal): who it is, what
// it found in search mode and its per-client server instances. Closing the
// session ends it in one place (closeSession).
type record struct {
	pr Principal
	// counted: the session has a stream of its own and is in the session
	// table, holding a place under maxSessions; a 2026-07-28 request's
	// session is neither.
	counted bool
	// placed: a 2026-07-28 request's session took a place under
	// maxSessions for its per-client instances (clientHandles.handleFor);
	// guarded by clientHandles.mu.
	placed  bool
	found   *foundSet                             // the session's own, or its caller's (OpenStateless)
	clients map[*upstream.Handle]*upstream.Handle // per-client instances by shared handle; guarded by clientHandles.mu
}

// Caller is what a call's requestState is bound to (mrtr.Caller).
func (r *record) Caller() string { return r.pr.Caller() }

// recordOf is the record of a session Open or OpenStateless opened, or nil.
func recordOf(ss *session.Session) *record {
	r, _ := ss.Principal().(*record)
	return r
}

// PrincipalOf is who opened ss.
func PrincipalOf(ss *session.Session) Principal {
	if r := recordOf(ss); r != nil {
		return r.pr
	}
	return Principal{}
}

// sessionTable holds every open downstream session with a stream of its
// own, and a 2026-07-28 request's while it listens, with its record.
type sessionTable struct{ m sync.Map }

// each calls f for every session in the table with its view id.
func (t *sessionTable) each(f func(ss *session.Session, viewID string)) {
	t.m.Range(func(k, v any) bool {
		f(k.(*session.Session), v.(*record).pr.View)
		return true
	})
}

// EachSession calls f for every open downstream session with its view id.
func (d *Dispatcher) EachSession(f func(ss *session.Session, viewID string)) { d.sessions.each(f) }

// SessionCounts counts the open sessions of each view.
func (d *Dispatcher) SessionCounts() map[string]int {
	n := map[string]int{}
	d.EachSession(func(_ *session.Session, id string) { n[id]++ })
	return n
}

// Open opens a session for a principal, in its view; out is the
// session's own stream (nil: none yet); resumed is what it was initialized
// with elsewhere, if it was (package edge, continuity.go).
func (d *Dispatcher) Open(pr Principal, id string, out session.Stream, resumed *session.Resumed) (*session.Session, error) {
	cur := d.serving.Load()
	if cur.Views[pr.View] == nil {
		return nil, fmt.Errorf("view %q: no such view", pr.View)
	}
	if err := d.held.take(pr, cur.Snap.Config.SessionLimit()); err != nil {
		return nil, err
	}
	rec := &record{pr: pr, counted: true, found: &foundSet{}}
	opt := d.sessionOptions(rec)
	opt.ID, opt.Resumed = id, resumed
	opt.OnLevel = func(*session.Session, mcp.LoggingLevel) { d.setLevel(context.Background(), pr.View) }
	opt.OnRootsChanged = func(*session.Session) {
		for _, h := range d.clients.of(rec) {
			_ = h.Notify(context.Background(), "notifications/roots/list_changed", nil)
		}
		d.peer.rootsChanged(pr.View)
	}
	opt.OnInitialized = d.peer.initialized(pr.View)
	ss := session.New(opt, out)
	d.sessions.m.Store(ss, rec)
	return ss, nil
}

// sessionOptions are what every session of rec's principal has.
func (d *Dispatcher) sessionOptions(rec *record) session.Options {
	return session.Options{
		Principal:    rec,
		Methods:      d.methods,
		ServerInfo:   d.serverInfo,
		Capabilities: capabilities,
		Instructions: instructions,
		Extensions:   d.extensionsFn,
		Cache:        rec.pr.cache(),
		OfferModern:  d.offerModernFn,
		OnClose:      d.closeFn,
		Logger:       d.sessLog,
	}
}

// closeSession is what ends with a session, all of it in its record: its
// place in the session table and under maxSessions, its subscriptions
// upstream and its per-client servers. What it found goes with the record.
func (d *Dispatcher) closeSession(ss *session.Session) {
	rec := recordOf(ss)
	if rec == nil {
		return
	}
	if rec.counted {
		d.sessions.m.Delete(ss)
		d.held.give(rec.pr)
		select {
		case d.sessionGone <- struct{}{}:
		default:
		}
		if v := d.serving.Load().Views[rec.pr.View]; v != nil {
			for _, uri := range ss.Subscriptions() {
				if e, own := v.Locate(uri); e != nil {
					_ = d.peer.unsubscribe(context.Background(), e.Handle, own)
				}
			}
		}
	}
	d.clients.closeOf(rec)
}

// sessionCounts counts the open sessions of each principal, and the
// 2026-07-28 requests running per-client instances, to hold each to
// maxSessions.
type sessionCounts struct {
	mu sync.Mutex
	n  map[callerID]int
	// freed is closed (and replaced) when a place is given back, for
	// takeWait.
	freed chan struct{}
}

// takeWait is take, waiting up to wait (and while ctx lasts) for a place
// when pr holds limit; on refusal held is how many pr holds.
func (c *sessionCounts) takeWait(ctx context.Context, pr Principal, limit int, wait time.Duration) (held int, err error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		var ok bool
		if held, ok = c.tryLocked(pr.id(), limit); ok {
			c.mu.Unlock()
			return 0, nil
		}
		if c.freed == nil {
			c.freed = make(chan struct{})
		}
		freed := c.freed
		c.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return held, session.ErrSessionLimit
		case <-ctx.Done():
			return held, ctx.Err()
		}
	}
}

// take counts one more session for pr, or refuses it at limit.
func (c *sessionCounts) take(pr Principal, limit int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if held, ok := c.tryLocked(pr.id(), limit); !ok {
		who := "this token"
		if pr.TokenID == "" {
			who = "this endpoint"
		}
		return fmt.Errorf("%w: %s holds %d (maxSessions); end one with DELETE or let idle ones expire (sessionIdleTimeout)", session.ErrSessionLimit, who, held)
	}
	return nil
}

// tryLocked counts one more for k unless k holds limit already, and
// returns how many k held before. c.mu is held.
func (c *sessionCounts) tryLocked(k callerID, limit int) (held int, ok bool) {
	if held = c.n[k]; held >= limit {
		return held, false
	}
	if c.n == nil {
		c.n = map[callerID]int{}
	}
	c.n[k]++
	return held, true
}

// give counts one session of pr less.
func (c *sessionCounts) give(pr Principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[pr.id()]--; c.n[pr.id()] <= 0 {
		delete(c.n, pr.id())
	}
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
}

// OpenStateless opens the session of one 2026-07-28 request: it has no
// stream of its own, holds no place under maxSessions and is in no
// session table (what is announced to sessions has nowhere to go); what it
// started (per-client servers) ends with it. In a search view, what it
// finds is its caller's (callerFound), and so are its lists.
func (d *Dispatcher) OpenStateless(pr Principal) (*session.Session, error) {
	v := d.serving.Load().Views[pr.View]
	if v == nil {
		return nil, fmt.Errorf("view %q: no such view", pr.View)
	}
	rec := &record{pr: pr}
	opt := d.sessionOptions(rec)
	if v.Search != nil {
		// What the caller found joins its lists: they depend on who asks.
		rec.found = d.callers.of(pr.Caller())
		opt.Cache.Private = true
	} else {
		rec.found = &foundSet{}
	}
	return session.New(opt, nil), nil
}

// cache is what 2026-07-28 answers in pr's view say about caching: they
// are private where a token or an agent chose the view. A reload may
// change any list at any time, so none stays fresh (ttlMs 0).
func (pr Principal) cache() session.Cache {
	return session.Cache{Private: pr.TokenID != "" || pr.View != ""}
}

// SessionGone is signalled (never blocking) when a session closes.
func (d *Dispatcher) SessionGone() <-chan struct{} { return d.sessionGone }

// CloseClients stops the per-client instances of server h (nil: of every
// server).
func (d *Dispatcher) CloseClients(h *upstream.Handle) { d.clients.closeWhere(h) }

// Peer is what upstreams send outside a call to (upstream.Options.Peer).
func (d *Dispatcher) Peer() upstream.Peer { return d.peer }

// Methods is the dispatch table every session uses.
func (d *Dispatcher) Methods() session.Methods { return d.methods }

// Tables counts what the dispatcher keeps for its sessions: the sessions
// in the table, the principals holding places under maxSessions, the
// per-client server instances and the upstream resource subscriptions.
// Every one of them goes back to zero when the last session closes;
// /status shows them, to spot a leak.
type Tables struct {
	Sessions      int `json:"sessions"`
	Principals    int `json:"principals"`
	Clients       int `json:"clients"`
	Subscriptions int `json:"subscriptions"`
	// PerClient is Clients by server (its shared handle), with their calls
	// in flight; /status shows it in each server's entry.
	PerClient map[*upstream.Handle]Instances `json:"-"`
}

// Tables counts what the dispatcher keeps for its sessions now.
func (d *Dispatcher) Tables() Tables {
	var t Tables
	d.sessions.each(func(*session.Session, string) { t.Sessions++ })
	d.held.mu.Lock()
	t.Principals = len(d.held.n)
	d.held.mu.Unlock()
	d.clients.mu.Lock()
	t.Clients = len(d.clients.owner)
	d.clients.mu.Unlock()
	t.PerClient = d.clients.instances()
	d.peer.subMu.Lock()
	t.Subscriptions = len(d.peer.subs)
	d.peer.subMu.Unlock()
	return t
}
