package dispatch

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/view"
)

// warmLazy starts the lazy servers of v that have not started yet. When
// one of them was still starting, it publishes the views that expose it
// and reports true, so a listing can include its tools.
func (d *Dispatcher) warmLazy(ctx context.Context, v *view.View) bool {
	spec := v.Snap.Views[v.ID]
	if spec == nil {
		return false
	}
	var (
		wg    sync.WaitGroup
		stale atomic.Bool
	)
	for _, e := range spec.Servers {
		if e.Handle == nil || !e.Handle.Spec().Lazy {
			continue
		}
		wg.Go(func() {
			if e.Handle.Warm(ctx) {
				stale.Store(true)
			}
		})
	}
	wg.Wait()
	if !stale.Load() {
		return false
	}
	// The handle's own change notification rebuilds the view too, but
	// possibly after this answer; rebuild now so it is in.
	d.rebuild(func(vs *view.Spec) bool { return vs == spec })
	return true
}

// awaitFirstStarts holds a list until every eager server of v that has no
// catalog yet (none listed, none cached from an earlier run) has had its
// first start attempt, each for at most its own connect timeout and all
// together at most firstListTimeout from switchboard's start, within the
// request's lifetime: the first list a client sees after a start is as
// complete as the clients' patience allows. Servers that come later are
// announced with list_changed. It returns the view to list from: v, or the
// one published since if a server finished starting meanwhile.
func (d *Dispatcher) awaitFirstStarts(ctx context.Context, v *view.View) *view.View {
	spec := v.Snap.Views[v.ID]
	if spec == nil {
		return v
	}
	budget := d.started.Add(v.Snap.Config.FirstListTimeout())
	waited := false
	for _, e := range spec.Servers {
		h := e.Handle
		if h == nil || h.Catalog() != nil && !h.Listed() || time.Now().After(budget) {
			// No server, a catalog from the cache already in the view,
			// or no time left. (A catalog the server just listed may
			// not be in the view yet: its first attempt ends once it is.)
			continue
		}
		first := h.FirstAttempt()
		select {
		case <-first:
			continue
		default:
		}
		waited = true
		t := time.NewTimer(time.Until(minTime(budget, time.Now().Add(h.Spec().ConnectTimeout))))
		select {
		case <-first:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if !waited {
		return v
	}
	// A server's catalog is published before its first attempt counts as
	// finished, so the generation served now has it.
	return d.serving.latest(v)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// awaitTool is called for a tool name v does not route. When a server of
// v that could provide the name (its prefix matches, or it publishes bare
// names) has not listed yet — on its first start, or lazy and never
// started — it is started and waited for, each bounded by its connect
// timeout and ctx, and the view is built again. It returns the view to
// look again in, or nil when no server could still provide the name.
func (d *Dispatcher) awaitTool(ctx context.Context, v *view.View, name string) *view.View {
	spec := v.Snap.Views[v.ID]
	if spec == nil {
		return nil
	}
	var wg sync.WaitGroup
	for _, e := range spec.Servers {
		h := e.Handle
		if h == nil || h.Listed() || !e.Bare && !strings.HasPrefix(name, "mcp_"+e.Prefix+"_") {
			continue
		}
		wg.Go(func() { h.Await(ctx) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	// The server's own change notification rebuilds the view too, but
	// possibly after this call looks; rebuild now so its tools are in.
	d.rebuild(func(vs *view.Spec) bool { return vs == spec })
	return d.serving.latest(v)
}

// latest is view v as the generation served now has it (v itself if that
// generation no longer has the view). Only lists use it: what they show
// changes no upstream.
func (s *Serving) latest(v *view.View) *view.View {
	if nv := s.Load().Views[v.ID]; nv != nil {
		return nv
	}
	return v
}
