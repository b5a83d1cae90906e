package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// clientKey names one downstream session's own instance of a server with
// isolation: per-client.
type clientKey struct {
	shared *upstream.Handle // the server's shared handle, which serves the catalog
	ss     *session.Session
}

// clientHandles holds the per-client instances. Each is created on the
// session's first use of the server and closed when the session ends or the
// server leaves the config. Safe for concurrent use.
type clientHandles struct {
	mu      sync.Mutex
	handles map[clientKey]*upstream.Handle
	owner   map[*upstream.Handle]*session.Session
	// n counts handles, for closeClients to pass by without the lock when
	// there are none: every session's end, a 2026-07-28 request's too,
	// looks for its own.
	n atomic.Int32
}

// handleFor returns the handle a request from ss uses for entry e: the
// shared one, or with isolation: per-client the session's own instance
// (its own process or upstream session), created on first use.
func (d *Dispatcher) handleFor(e *view.ServerEntry, ss *session.Session) *upstream.Handle {
	if !e.PerClient || ss == nil || e.Handle == nil {
		return e.Handle
	}
	c := &d.clients
	k := clientKey{e.Handle, ss}
	c.mu.Lock()
	if h, ok := c.handles[k]; ok {
		c.mu.Unlock()
		return h
	}
	spec := e.Handle.Spec()
	spec.Name = e.HandleKey + "#" + shortID(ss.ID())
	spec.Lazy = false
	spec.ClientRoots = true
	h := d.newClient(spec, d.peer)
	if c.handles == nil {
		c.handles, c.owner = map[clientKey]*upstream.Handle{}, map[*upstream.Handle]*session.Session{}
	}
	c.handles[k] = h
	c.owner[h] = ss
	c.n.Store(int32(len(c.handles)))
	c.mu.Unlock()
	h.Start()
	d.log.Info("per-client upstream started", "upstream", spec.Name)
	return h
}

// sessionOf returns the downstream session a per-client handle belongs to.
func (d *Dispatcher) sessionOf(h *upstream.Handle) *session.Session {
	d.clients.mu.Lock()
	defer d.clients.mu.Unlock()
	return d.clients.owner[h]
}

// closeClients stops the per-client instances whose key matches.
func (d *Dispatcher) closeClients(match func(clientKey) bool) {
	c := &d.clients
	if c.n.Load() == 0 {
		return
	}
	c.mu.Lock()
	var hs []*upstream.Handle
	for k, h := range c.handles {
		if match(k) {
			hs = append(hs, h)
			delete(c.handles, k)
			delete(c.owner, h)
		}
	}
	c.n.Store(int32(len(c.handles)))
	c.mu.Unlock()
	if len(hs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = h.Close(ctx)
			d.log.Info("per-client upstream stopped", "upstream", h.Name())
		}()
	}
	wg.Wait()
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	if id == "" {
		return "stdio"
	}
	return id
}

// clientHandlesOf lists the per-client instances of a session.
func (d *Dispatcher) clientHandlesOf(ss *session.Session) []*upstream.Handle {
	d.clients.mu.Lock()
	defer d.clients.mu.Unlock()
	var hs []*upstream.Handle
	for k, h := range d.clients.handles {
		if k.ss == ss {
			hs = append(hs, h)
		}
	}
	return hs
}
