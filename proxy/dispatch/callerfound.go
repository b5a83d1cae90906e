package dispatch

import (
	"sync"
	"time"
)

// Bounds of the found sets kept for callers without a session.
const (
	maxCallers = 1024             // callers whose found sets are kept; the least recently active goes first
	callerIdle = 30 * time.Minute // a caller's found set is dropped after this long without a search or list
)

// callerFound holds what each caller found in search mode when its
// requests have no session of their own (2026-07-28): a stateless
// request's record shares its caller's set, so the tools one request
// found join the next request's tools/list. A caller is its principal
// (the view and the token's value, Principal.Caller): callers without a
// token share their view's set. Bounded by maxCallers and callerIdle; a
// process keeps its own (another replica does not know them).
type callerFound struct {
	mu  sync.Mutex
	m   map[string]*callerEntry
	now func() time.Time
}

type callerEntry struct {
	found *foundSet
	seen  time.Time
}

func newCallerFound(now func() time.Time) *callerFound {
	return &callerFound{m: map[string]*callerEntry{}, now: now}
}

// of is the found set of caller, made if it has none (or its own
// expired); it counts as activity.
func (c *callerFound) of(caller string) *foundSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	e := c.m[caller]
	if e == nil || now.Sub(e.seen) > callerIdle {
		if e == nil && len(c.m) >= maxCallers {
			c.evict(now)
		}
		e = &callerEntry{found: &foundSet{}}
		c.m[caller] = e
	}
	e.seen = now
	return e.found
}

// evict drops the expired entries, and if none had expired, the least
// recently active one.
func (c *callerFound) evict(now time.Time) {
	var oldest string
	var oldestSeen time.Time
	for k, e := range c.m {
		if now.Sub(e.seen) > callerIdle {
			delete(c.m, k)
			continue
		}
		if oldest == "" || e.seen.Before(oldestSeen) {
			oldest, oldestSeen = k, e.seen
		}
	}
	if len(c.m) >= maxCallers {
		delete(c.m, oldest)
	}
}

// len is how many callers have a found set.
func (c *callerFound) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
