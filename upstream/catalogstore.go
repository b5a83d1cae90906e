package upstream

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// catalogStore holds the catalog a Handle lists: the server's own listing,
// or until there is one the seed from an earlier run (Seed); and how the
// listings of the lists other than tools/list went, for Status. The
// supervisor is the only writer while the Handle is open.
type catalogStore struct {
	log    hclog.Logger
	cur    atomic.Pointer[Catalog]
	seeded atomic.Pointer[Catalog] // the catalog Seed gave, until a listing replaces it
	resync chan struct{}           // lists are stale (requestResync, listChanged)

	mu      sync.Mutex
	retryAt time.Time       // when the failing lists are asked for again
	fails   map[string]int  // failed listings by method
	stale   map[string]bool // the lists to ask for again at the next resync
	all     bool            // every list is stale
}

func newCatalogStore(log hclog.Logger) catalogStore {
	return catalogStore{log: log, resync: make(chan struct{}, 1)}
}

// load is the catalog to expose, or nil.
func (c *catalogStore) load() *Catalog { return c.cur.Load() }

// store publishes cat (nil: the server's tools must not be listed).
func (c *catalogStore) store(cat *Catalog) { c.cur.Store(cat) }

// seed publishes cat as the seed if there is no catalog yet, and reports
// whether it did.
func (c *catalogStore) seed(cat *Catalog) bool {
	if cat == nil || !c.cur.CompareAndSwap(nil, cat) {
		return false
	}
	c.seeded.Store(cat)
	return true
}

// listed reports whether the catalog is the server's own listing of this
// run, not a seed nor none.
func (c *catalogStore) listed() bool {
	cat := c.cur.Load()
	return cat != nil && cat != c.seeded.Load()
}

// base is what a new session's listing starts from: the last listing, if
// any (a seed from disk is not one).
func (c *catalogStore) base() *Catalog {
	if !c.listed() {
		return nil
	}
	return c.cur.Load()
}

// requestResync asks the supervisor to list the whole catalog again. It
// never blocks.
func (c *catalogStore) requestResync() {
	c.mu.Lock()
	c.all = true
	c.mu.Unlock()
	c.wake()
}

// listChanged asks the supervisor to list again what a
// notifications/…/list_changed names: the tools, the prompts, or the
// resources with their templates. A server that says its tools changed
// five times as it starts (server-everything does) costs one tools/list,
// not a listing of everything. It never blocks.
func (c *catalogStore) listChanged(notification string) {
	var methods []string
	switch notification {
	case "notifications/tools/list_changed":
		methods = []string{ListTools}
	case "notifications/prompts/list_changed":
		methods = []string{ListPrompts}
	case "notifications/resources/list_changed":
		methods = []string{ListResources, ListTemplates}
	default:
		c.requestResync()
		return
	}
	c.mu.Lock()
	if c.stale == nil {
		c.stale = map[string]bool{}
	}
	for _, m := range methods {
		c.stale[m] = true
	}
	c.mu.Unlock()
	c.wake()
}

// wake tells the supervisor that lists are stale; a wake already pending
// covers this one.
func (c *catalogStore) wake() {
	select {
	case c.resync <- struct{}{}:
	default:
	}
}

// takeStale returns the lists to ask for again (nil: all of them) and
// forgets them; due is false when none is stale (a wake whose lists an
// earlier wake already took).
func (c *catalogStore) takeStale() (only map[string]bool, due bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	only, due = c.stale, c.all || len(c.stale) > 0
	if c.all {
		only = nil
	}
	c.stale, c.all = nil, false
	return only, due
}

// status fills in what Status says about the catalog.
func (c *catalogStore) status(st *Status) {
	c.mu.Lock()
	st.CatalogRetry = c.retryAt
	if len(c.fails) > 0 {
		st.ListFailures = maps.Clone(c.fails)
	}
	c.mu.Unlock()
	cat := c.cur.Load()
	if cat == nil {
		return
	}
	st.CatalogCached = cat == c.seeded.Load()
	st.Tools, st.Prompts, st.Resources = len(cat.Tools), len(cat.Prompts), len(cat.Resources)
	st.Catalog = CatalogComplete
	if !cat.Complete() {
		st.Catalog, st.CatalogErrors = CatalogPartial, maps.Clone(cat.Errors)
	}
}

// listRetry schedules a session's retries of the lists that failed. It is
// used only by the supervisor goroutine.
type listRetry struct {
	timer *time.Timer
	n     int               // listings in a row that left the catalog partial
	said  map[string]string // the error logged at WARN for each failing list
}

// C fires when the failing lists are due again; nil while none fail.
func (r *listRetry) C() <-chan time.Time {
	if r.timer == nil {
		return nil
	}
	return r.timer.C
}

func (r *listRetry) stop() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// relist lists the catalog again on the live session s: every list (only
// nil, after a list_changed) or the ones that failed, within sp's connect
// timeout. A failing tools/list keeps the catalog as it was. It reports
// whether the catalog was replaced.
func (c *catalogStore) relist(ctx context.Context, s *session, sp *Spec, r *listRetry, only map[string]bool) bool {
	ctx, cancel := context.WithTimeout(ctx, sp.connectTimeout())
	cat, err := listCatalog(ctx, s.cl, sp, c.load(), only)
	cancel()
	if err != nil {
		c.log.Warn("upstream relist", "error", err)
		return false
	}
	c.store(cat)
	if retried(only, cat) {
		c.note(r, cat)
	}
	c.log.Debug("upstream catalog changed", "tools", len(cat.Tools), "prompts", len(cat.Prompts), "resources", len(cat.Resources))
	return true
}

// retried reports whether a listing of only (nil: every list) asked
// again for a list that is failing, or made the catalog complete; a
// listing of the tools alone leaves a failing prompts/list to its retries
// as they were.
func retried(only map[string]bool, cat *Catalog) bool {
	if only == nil || cat.Complete() {
		return true
	}
	for m := range cat.Errors {
		if only[m] {
			return true
		}
	}
	return false
}

// note follows up a listing: a partial catalog has each failed list
// logged once, with the upstream's message, and counted, and its retry
// scheduled (5 s doubling to 5 min); a complete one ends the retries.
func (c *catalogStore) note(r *listRetry, cat *Catalog) {
	r.stop()
	if cat == nil || cat.Complete() {
		if r.n > 0 {
			c.log.Info("upstream catalog complete", "attempt", r.n+1)
		}
		r.n, r.said = 0, nil
		c.mu.Lock()
		c.retryAt = time.Time{}
		c.mu.Unlock()
		return
	}
	r.n++
	wait := listRetryDelay(r.n)
	r.timer = time.NewTimer(wait)
	c.mu.Lock()
	c.retryAt = time.Now().Add(wait)
	if c.fails == nil {
		c.fails = map[string]int{}
	}
	for m := range cat.Errors {
		c.fails[m]++
	}
	c.mu.Unlock()
	if r.said == nil {
		r.said = map[string]string{}
	}
	for _, m := range slices.Sorted(maps.Keys(cat.Errors)) {
		// A list that fails again the same way is said once at WARN; its
		// retries go to DEBUG (and /status counts them).
		log := c.log.Warn
		if r.said[m] == cat.Errors[m] {
			log = c.log.Debug
		}
		r.said[m] = cat.Errors[m]
		log("upstream list failed", "method", m, "error", cat.Errors[m], "attempt", r.n, "duration", wait.Round(time.Millisecond))
	}
}

// endRetry stops the retries when the session ends; the next session
// lists afresh.
func (c *catalogStore) endRetry(r *listRetry) {
	r.stop()
	c.mu.Lock()
	c.retryAt = time.Time{}
	c.mu.Unlock()
}
