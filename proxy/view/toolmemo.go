package view

import (
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// toolMemo remembers, for each listed tool while the tool is in memory,
// its DefinitionHash and the routes it was last built into. Every server
// that comes up or lists anew rebuilds each view that shows it, over every
// server's catalog: without it, ten servers starting hashed and cleaned
// every tool of all ten ten times over, most of what start-up allocated.
// A listed tool is never changed in place: a listing decodes new objects,
// a catalog that keeps a list keeps its objects as they were, and what a
// view publishes is a copy (package sanitize). So a tool object's hash is
// computed once, its route is built again only when what it is built with
// changed (routeKey), and both are forgotten when the object is collected.
type toolMemo struct {
	mu sync.Mutex
	m  map[weak.Pointer[mcp.Tool]]*toolFacts
	// gen is the snapshot the kept routes were built for. Each holds its
	// server's entry, and through it the server's Handle: routes of an
	// older snapshot are never asked for again, and are dropped when the
	// first route of a newer one is.
	gen int64
}

// toolFacts is what is remembered of one tool.
type toolFacts struct {
	hash string // "" until asked for
	// built are the routes last built of the tool, the latest first: one
	// per view that shows its server (each view has its own entry), up to
	// keptRoutes.
	built []*builtRoute
}

// keptRoutes bounds toolFacts.built: the default view and up to three
// agents' views that show the tool's server keep theirs.
const keptRoutes = 4

// routeKey is everything a tool's route is built with besides the tool
// (newRoute).
type routeKey struct {
	public  string
	entry   *ServerEntry // of one snapshot: its settings and overrides
	maxDesc int
	profile string
	block   bool
	// secrets is how many secrets the redactor knew (secrets.Set only
	// grows): a description cleaned before a server's start added one is
	// cleaned again. -1: the redactor cannot tell, and nothing is kept.
	secrets int
}

// builtRoute is newRoute's answer for one routeKey.
type builtRoute struct {
	key      routeKey
	route    *Route
	findings []sanitize.Finding
	err      error
}

// factsLocked returns t's entry, made if it has none; it requires c.mu.
func (c *toolMemo) factsLocked(t *mcp.Tool) *toolFacts {
	k := weak.Make(t)
	f, ok := c.m[k]
	if !ok {
		if c.m == nil {
			c.m = make(map[weak.Pointer[mcp.Tool]]*toolFacts)
		}
		f = &toolFacts{}
		c.m[k] = f
		runtime.AddCleanup(t, c.forget, k)
	}
	return f
}

// hash returns t's DefinitionHash.
func (c *toolMemo) hash(t *mcp.Tool) string {
	c.mu.Lock()
	h := c.factsLocked(t).hash
	c.mu.Unlock()
	if h != "" {
		return h
	}
	h = sanitize.DefinitionHash(t)
	c.mu.Lock()
	c.factsLocked(t).hash = h
	c.mu.Unlock()
	return h
}

// route returns build(t, key) in snapshot gen, built again only if no
// route of t kept was built with key.
func (c *toolMemo) route(t *mcp.Tool, gen int64, key routeKey, build func(*mcp.Tool, routeKey) (*Route, []sanitize.Finding, error)) (*Route, []sanitize.Finding, error) {
	if key.secrets < 0 {
		return build(t, key)
	}
	c.mu.Lock()
	if gen > c.gen {
		for _, f := range c.m {
			f.built = nil
		}
		c.gen = gen
	}
	if gen < c.gen {
		c.mu.Unlock()
		return build(t, key)
	}
	for _, b := range c.factsLocked(t).built {
		if b.key == key {
			c.mu.Unlock()
			return b.route, b.findings, b.err
		}
	}
	c.mu.Unlock()
	r, findings, err := build(t, key)
	c.mu.Lock()
	f := c.factsLocked(t)
	f.built = slices.DeleteFunc(f.built, func(b *builtRoute) bool { return b.key.entry == key.entry })
	f.built = slices.Insert(f.built[:min(len(f.built), keptRoutes-1)], 0, &builtRoute{key: key, route: r, findings: findings, err: err})
	c.mu.Unlock()
	return r, findings, err
}

// forget drops what is remembered of a tool that was collected.
func (c *toolMemo) forget(k weak.Pointer[mcp.Tool]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// len is how many tools are remembered.
func (c *toolMemo) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
