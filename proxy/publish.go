package proxy

import (
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// publish makes snap current: it builds every view from it and swaps them
// in with it at once, then tells each session of every list that changed.
// It returns the replaced generations still in use (Serving.Swap).
func (p *Proxy) publish(snap *view.Snapshot, acc dispatch.Access) []*dispatch.Gen {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	views := make(map[string]*view.View, len(snap.Views))
	for id := range snap.Views {
		views[id] = p.builder.Build(snap, id)
	}
	prev := p.serving.Load()
	next := dispatch.NewGen(snap, views, acc, p.obs)
	p.notices.Report(p.log, next.Notes)
	waits := p.serving.Swap(next)
	p.d.Announce(prev.Views, views)
	return waits
}

// rebuild rebuilds the views that keep reports true for, from the current
// snapshot and the upstreams' catalogs as they are now, and publishes them.
func (p *Proxy) rebuild(keep func(spec *view.Spec) bool) {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	cur := p.serving.Load()
	if cur.Snap == nil {
		return
	}
	views := make(map[string]*view.View, len(cur.Views))
	changed := false
	for id, v := range cur.Views {
		if spec := cur.Snap.Views[id]; spec != nil && keep(spec) {
			v, changed = p.builder.Build(cur.Snap, id), true
		}
		views[id] = v
	}
	if !changed {
		return
	}
	next := dispatch.NewGen(cur.Snap, views, cur.Access, cur.Observers)
	p.notices.Report(p.log, next.Notes)
	p.serving.Swap(next)
	p.d.Announce(cur.Views, views)
}

// rebuildAll rebuilds every view.
func (p *Proxy) rebuildAll() { p.rebuild(func(*view.Spec) bool { return true }) }

// onUpstreamChange rebuilds every view that exposes h.
func (p *Proxy) onUpstreamChange(h *upstream.Handle) {
	p.rebuild(func(spec *view.Spec) bool { return spec.Exposes(h) })
	p.saveCatalog(h)
}
