package proxy

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// served is everything switchboard serves at one moment: one config
// generation and, per view, the routes built from it and from the
// upstreams' catalogs. It is immutable once published, and published whole
// (Proxy.serving): a reload swaps config, routes, policy, limiters,
// sanitize options and handles at once, and each request loads it once
// (acquire) and uses only what it loaded.
type served struct {
	snap  *Snapshot
	views map[string]*view // by view id; "" is the default view
	notes *genNotes        // what building the views found, for /status

	// refs counts the requests using this generation; once it is replaced
	// (retired) and refs reaches zero, drained closes. Handles a reload
	// removes are stopped only after every older generation drained.
	refs    atomic.Int64
	retired atomic.Bool
	once    sync.Once
	drained chan struct{}
}

func newServed(snap *Snapshot, views map[string]*view) *served {
	return &served{snap: snap, views: views, notes: gatherNotes(views), drained: make(chan struct{})}
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
func (p *Proxy) publish(snap *Snapshot) []*served {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	views := make(map[string]*view, len(snap.Views))
	for id := range snap.Views {
		views[id] = p.buildView(snap, id)
	}
	prev := p.serving.Load()
	next := newServed(snap, views)
	p.notices.report(p.log, next.notes)
	waits := p.swap(next)
	p.announce(prev.views, views)
	return waits
}

// rebuild rebuilds the views that keep reports true for, from the current
// snapshot and the upstreams' catalogs as they are now, and publishes them.
func (p *Proxy) rebuild(keep func(spec *ViewSpec) bool) {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	cur := p.serving.Load()
	if cur.snap == nil {
		return
	}
	views := make(map[string]*view, len(cur.views))
	changed := false
	for id, v := range cur.views {
		if spec := cur.snap.Views[id]; spec != nil && keep(spec) {
			v, changed = p.buildView(cur.snap, id), true
		}
		views[id] = v
	}
	if !changed {
		return
	}
	next := newServed(cur.snap, views)
	p.notices.report(p.log, next.notes)
	p.swap(next)
	p.announce(cur.views, views)
}

// rebuildAll rebuilds every view.
func (p *Proxy) rebuildAll() { p.rebuild(func(*ViewSpec) bool { return true }) }

// onUpstreamChange rebuilds every view that exposes h.
func (p *Proxy) onUpstreamChange(h *upstream.Handle) {
	p.rebuild(func(spec *ViewSpec) bool { return spec.exposes(h) })
	p.saveCatalog(h)
}

// exposes reports whether the view serves handle h.
func (vs *ViewSpec) exposes(h *upstream.Handle) bool {
	for _, e := range vs.Servers {
		if e.Handle == h {
			return true
		}
	}
	return false
}

// announce tells the sessions of each view which of its lists differ
// between before and after; a view that is gone lost all of them.
func (p *Proxy) announce(before, after map[string]*view) {
	empty := (&view{}).fingerprint()
	changed := map[string][]string{}
	for id, old := range before {
		now := empty
		if v := after[id]; v != nil {
			now = v.hashes
		}
		changed[id] = listChanges(old.hashes, now)
	}
	for id, v := range after {
		if _, ok := before[id]; !ok {
			changed[id] = listChanges(empty, v.hashes)
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

// listChanges names the list_changed notifications between two versions
// of a view.
func listChanges(old, now listHashes) []string {
	var out []string
	if old.tools != now.tools {
		out = append(out, "notifications/tools/list_changed")
	}
	if old.prompts != now.prompts {
		out = append(out, "notifications/prompts/list_changed")
	}
	if old.resources != now.resources {
		out = append(out, "notifications/resources/list_changed")
	}
	return out
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
