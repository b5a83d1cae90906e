package view

import (
	"runtime"
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// toolHashes remembers the DefinitionHash of each listed tool for as long
// as the tool is in memory. Every server that comes up or lists anew
// rebuilds each view that shows it, over every server's catalog: without
// it, ten servers starting hashed every tool of all ten ten times over,
// a third of what start-up allocated. A listed tool is never changed in
// place: a listing decodes new objects, a catalog that keeps a list keeps
// its objects as they were, and what a view publishes is a copy (package
// sanitize). So the hash of a tool object is computed once, and forgotten
// when the object is collected.
type toolHashes struct {
	mu sync.Mutex
	m  map[weak.Pointer[mcp.Tool]]string
}

// of returns t's DefinitionHash.
func (c *toolHashes) of(t *mcp.Tool) string {
	k := weak.Make(t)
	c.mu.Lock()
	h, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return h
	}
	h = sanitize.DefinitionHash(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		if c.m == nil {
			c.m = make(map[weak.Pointer[mcp.Tool]]string)
		}
		c.m[k] = h
		runtime.AddCleanup(t, c.forget, k)
	}
	return h
}

// forget drops the hash of a tool that was collected.
func (c *toolHashes) forget(k weak.Pointer[mcp.Tool]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// len is how many tools' hashes are kept.
func (c *toolHashes) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
