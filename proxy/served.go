package proxy

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// served is everything switchboard serves at one moment: one config
// generation and, per view, the routes built from it and from the
// upstreams' catalogs. It is immutable once published, and published whole
// (Proxy.serving): a reload swaps config, routes, policy, limiters,
// sanitize options and handles at once, and each request loads it once
// (acquire) and uses only what it loaded.
type served struct {
	snap  *view.Snapshot
	views map[string]*view.View // by view id; "" is the default view
	notes *view.Notes           // what building the views found, for /status
	// access is who may use it: the downstream tokens and the admin
	// reload token, resolved from snap's config.
	access access

	// refs counts the requests using this generation; once it is replaced
	// (retired) and refs reaches zero, drained closes. Handles a reload
	// removes are stopped only after every older generation drained.
	refs    atomic.Int64
	retired atomic.Bool
	once    sync.Once
	drained chan struct{}
}

func newServed(snap *view.Snapshot, views map[string]*view.View, acc access) *served {
	return &served{snap: snap, views: views, notes: view.GatherNotes(views), access: acc, drained: make(chan struct{})}
}

// acquire loads the current generation and counts the caller in it until
// release. A generation counted is never drained under its user: the count
// is taken before the generation is retired, or taken again on the newer one.
func (p *Proxy) acquire() *served {
	for {
		s := p.serving.Load()
		s.refs.Add(1)
		if p.serving.Load() == s {
			return s
		}
		s.release() // replaced meanwhile: use the newer one
	}
}

// release ends a use that acquire counted.
func (s *served) release() {
	if s.refs.Add(-1) == 0 {
		s.drainIfIdle()
	}
}

// retire marks a replaced generation; drained closes once its last
// request released it.
func (s *served) retire() {
	s.retired.Store(true)
	s.drainIfIdle()
}

// drainIfIdle closes drained when the generation is retired and unused.
// The count is read after the retired mark: a zero seen before it may
// since have gained a request that took the generation while it was still
// current. After the mark no request can take it any more (acquire's
// second load fails), so a zero read then is final.
func (s *served) drainIfIdle() {
	if s.retired.Load() && s.refs.Load() == 0 {
		s.once.Do(func() { close(s.drained) })
	}
}

// swap publishes next in place of the current generation and retires the
// old one; p.pubMu held. It returns every replaced generation not yet
// drained, for a retire of handles to wait on.
func (p *Proxy) swap(next *served) []*served {
	old := p.serving.Swap(next)
	old.retire()
	live := make([]*served, 0, len(p.draining)+1)
	for _, s := range append(p.draining, old) {
		select {
		case <-s.drained:
		default:
			live = append(live, s)
		}
	}
	p.draining = live
	return live
}

// publish makes snap current: it builds every view from it and swaps them
// in with it at once, then tells each session of every list that changed.
// It returns the generations still in use, as swap does.
func (p *Proxy) publish(snap *view.Snapshot, acc access) []*served {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	views := make(map[string]*view.View, len(snap.Views))
	for id := range snap.Views {
		views[id] = p.builder.Build(snap, id)
	}
	prev := p.serving.Load()
	next := newServed(snap, views, acc)
	p.notices.Report(p.log, next.notes)
	waits := p.swap(next)
	p.announce(prev.views, views)
	return waits
}

// rebuild rebuilds the views that keep reports true for, from the current
// snapshot and the upstreams' catalogs as they are now, and publishes them.
func (p *Proxy) rebuild(keep func(spec *view.ViewSpec) bool) {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	cur := p.serving.Load()
	if cur.snap == nil {
		return
	}
	views := make(map[string]*view.View, len(cur.views))
	changed := false
	for id, v := range cur.views {
		if spec := cur.snap.Views[id]; spec != nil && keep(spec) {
			v, changed = p.builder.Build(cur.snap, id), true
		}
		views[id] = v
	}
	if !changed {
		return
	}
	next := newServed(cur.snap, views, cur.access)
	p.notices.Report(p.log, next.notes)
	p.swap(next)
	p.announce(cur.views, views)
}

// rebuildAll rebuilds every view.
func (p *Proxy) rebuildAll() { p.rebuild(func(*view.ViewSpec) bool { return true }) }

// onUpstreamChange rebuilds every view that exposes h.
func (p *Proxy) onUpstreamChange(h *upstream.Handle) {
	p.rebuild(func(spec *view.ViewSpec) bool { return spec.Exposes(h) })
	p.saveCatalog(h)
}

// announce tells the sessions of each view which of its lists differ
// between before and after; a view that is gone lost all of them.
func (p *Proxy) announce(before, after map[string]*view.View) {
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
	p.eachSession(func(ss *session.Session, viewID string) {
		if !ss.Announced() {
			return
		}
		for _, m := range changed[viewID] {
			_ = ss.Notify(context.Background(), m, nil)
		}
	})
}

// eachSession calls f for every open downstream session with its view id.
func (p *Proxy) eachSession(f func(ss *session.Session, viewID string)) {
	p.sessions.Range(func(k, v any) bool {
		f(k.(*session.Session), v.(string))
		return true
	})
}

// sessionCounts counts the open sessions of each view.
func (p *Proxy) sessionCounts() map[string]int {
	n := map[string]int{}
	p.eachSession(func(_ *session.Session, id string) { n[id]++ })
	return n
}
