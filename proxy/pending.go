package proxy

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// handleSet is the shared upstream handles, by key; p.mu guards it.
//
// A reload keeps a running handle whose spec has the same fingerprint and
// starts a new one for a server it adds or changes. A changed server's old
// process serves until the new one finished its first start attempt, so
// that its tools never disappear: until then the new handle is pending. A
// reload that started handles waits for them before it publishes (next),
// but never holds a newer reload: a newer config supersedes the one
// waiting, closes the pending starts it changes again or removes, and keeps
// the others pending, to be swapped in when they are up.
type handleSet struct {
	served  map[string]*upstream.Handle // the published generation's
	pending map[string]*pendingStart    // started for a changed or added server, not served yet
	next    *reloadJob                  // the latest reload, waiting for the starts it made; nil if none
	cur     *reloadJob                  // the published config
}

// pendingStart is a handle a reload started, until it serves.
type pendingStart struct {
	key  string
	h    *upstream.Handle
	done bool // its first start attempt finished, or the time allowed for it passed
}

// reloadJob is a config apply accepted, with what publishing it takes.
type reloadJob struct {
	c          *config.Config
	specs      map[string]upstream.Spec
	planned    map[string][]view.PlannedServer
	acc        dispatch.Access
	stateKey   string
	sessionKey string
	obs        *observers      // nil: the settings are those published (a start swapped in)
	starts     []*pendingStart // the handles this reload started
	rec        *reloadRecord   // nil: the first config, or a start swapped in
}

// ready reports whether every start j made finished; p.mu held.
func (j *reloadJob) ready() bool {
	for _, ps := range j.starts {
		if !ps.done {
			return false
		}
	}
	return true
}

// again is j to publish anew, with the same config and settings, when a
// pending start it runs is up.
func (j *reloadJob) again() *reloadJob {
	return &reloadJob{c: j.c, specs: j.specs, planned: j.planned, acc: j.acc}
}

// digest is the digest of the config applied last: the one waiting for
// the servers it started, else the one published.
func (hs *handleSet) digest() string {
	switch {
	case hs.next != nil:
		return hs.next.c.Digest()
	case hs.cur != nil:
		return hs.cur.c.Digest()
	}
	return ""
}

// changed are the handle keys whose spec differs from the served one's, or
// that are new.
func (hs *handleSet) changed(specs map[string]upstream.Spec) map[string]bool {
	changed := map[string]bool{}
	for key, spec := range specs {
		if h, ok := hs.served[key]; !ok || !reflect.DeepEqual(h.Spec(), spec) {
			changed[key] = true
		}
	}
	return changed
}

// plan makes hs ready to serve specs: a served handle with the same
// fingerprint is kept, and so is a pending one; a new handle (made by mk,
// not started) is pending for every other spec. It returns the new pending
// starts, and the pending handles specs no longer want, to close.
func (hs *handleSet) plan(specs map[string]upstream.Spec, mk func(upstream.Spec) *upstream.Handle) (starts []*pendingStart, dropped []*upstream.Handle) {
	for key, ps := range hs.pending {
		spec, ok := specs[key]
		if !ok || ps.h.Spec().Fingerprint() != spec.Fingerprint() {
			dropped = append(dropped, ps.h)
			delete(hs.pending, key)
		}
	}
	for _, key := range view.SortedKeys(specs) {
		spec := specs[key]
		if h, ok := hs.served[key]; ok && h.Spec().Fingerprint() == spec.Fingerprint() {
			if ps := hs.pending[key]; ps != nil { // a change reverted before its start finished
				dropped = append(dropped, ps.h)
				delete(hs.pending, key)
			}
			continue
		}
		if hs.pending[key] != nil {
			continue
		}
		ps := &pendingStart{key: key, h: mk(spec)}
		hs.pending[key] = ps
		starts = append(starts, ps)
	}
	return starts, dropped
}

// swap makes the handles serve specs: a pending start with the spec's
// fingerprint is swapped in once it is done, or at once for a server that
// has no old process; until then the old one serves. Served handles with
// the spec's fingerprint take its settings (Update). It returns the handles
// to publish, those swapped in and those no longer served.
func (hs *handleSet) swap(specs map[string]upstream.Spec, updateFailed func(*upstream.Handle, error)) (next map[string]*upstream.Handle, in, out []*upstream.Handle) {
	next = make(map[string]*upstream.Handle, len(specs))
	for key, spec := range specs {
		h, ps := hs.served[key], hs.pending[key]
		if ps != nil && ps.h.Spec().Fingerprint() == spec.Fingerprint() && (ps.done || h == nil) {
			next[key] = ps.h
			delete(hs.pending, key)
			in = append(in, ps.h)
			continue
		}
		next[key] = h
		if h.Spec().Fingerprint() == spec.Fingerprint() {
			// Settings that need no new process apply in place
			// (timeouts, restart policy, breaker, laziness).
			if err := h.Update(spec); err != nil {
				updateFailed(h, err)
			}
		}
	}
	for key, h := range hs.served {
		if next[key] != h {
			out = append(out, h)
		}
	}
	hs.served = next
	return next, in, out
}

// pendingKeys lists the keys of the pending starts, sorted.
func (hs *handleSet) pendingKeys() []string {
	keys := make([]string, 0, len(hs.pending))
	for k := range hs.pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// all is every handle, served and pending.
func (hs *handleSet) all() []*upstream.Handle {
	out := make([]*upstream.Handle, 0, len(hs.served)+len(hs.pending))
	for _, h := range hs.served {
		out = append(out, h)
	}
	for _, ps := range hs.pending {
		out = append(out, ps.h)
	}
	return out
}

// stillPending keeps in the last reload's Pending only the servers whose
// start is still pending.
func stillPending(last *atomic.Pointer[ReloadResult], pending map[string]*pendingStart) {
	lr := last.Load()
	if lr == nil {
		return
	}
	keep := slices.DeleteFunc(slices.Clone(lr.Pending), func(k string) bool { return pending[k] == nil })
	if len(keep) == len(lr.Pending) {
		return
	}
	c := *lr
	c.Pending = keep
	last.CompareAndSwap(lr, &c)
}

// awaitStart calls done once ps's first start attempt finished, or when
// the time allowed for it passed (its connect timeout and a second); not
// if ctx ends first.
func awaitStart(ctx context.Context, ps *pendingStart, done func(*pendingStart)) {
	t := time.NewTimer(ps.h.Spec().ConnectTimeout + time.Second)
	defer t.Stop()
	select {
	case <-ps.h.FirstAttempt():
	case <-t.C:
	case <-ctx.Done():
		return
	}
	done(ps)
}
