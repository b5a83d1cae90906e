package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// clientHandles are the per-client instances of servers with isolation:
// per-client. Each is created on a session's first use of the server, is
// kept in the session's record, and is closed when the session ends or the
// server leaves the config. Safe for concurrent use.
type clientHandles struct {
	log  hclog.Logger
	make func(upstream.Spec, upstream.Peer) *upstream.Handle
	peer upstream.Peer
	// held and limit hold 2026-07-28 requests' instances to maxSessions.
	held  *sessionCounts
	limit func() int

	mu sync.Mutex // guards owner and every record's clients
	// owner is the session each instance belongs to, for what the
	// instance sends outside a call (peer).
	owner map[*upstream.Handle]*session.Session
	// n counts instances, for closing to pass by without the lock when
	// there are none: every session's end, a 2026-07-28 request's too,
	// looks for its own.
	n atomic.Int32
}

// clientWait is how long a 2026-07-28 request waits for a place under
// maxSessions when it needs a per-client instance and its caller holds
// every place: about as long as a short call takes to end.
const clientWait = 5 * time.Second

// handleFor returns the handle a request from ss uses for entry e: the
// shared one, or with isolation: per-client the session's own instance
// (its own process or upstream session), created on first use.
//
// A 2026-07-28 request holds no place under maxSessions of its own, so
// the instance it starts takes one, for its caller (token, agent, or the
// endpoint), until the request ends: its instances are bounded as
// sessions are. When every place is held it waits up to clientWait for
// one, then fails with an error naming the cap.
func (c *clientHandles) handleFor(ctx context.Context, e *view.ServerEntry, ss *session.Session) (*upstream.Handle, error) {
	rec := recordOf(ss)
	if !e.PerClient || rec == nil || e.Handle == nil {
		return e.Handle, nil
	}
	c.mu.Lock()
	if h, ok := rec.clients[e.Handle]; ok {
		c.mu.Unlock()
		return h, nil
	}
	place := !rec.counted && !rec.placed
	c.mu.Unlock()
	if place {
		if err := c.takePlace(ctx, e, rec); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	if h, ok := rec.clients[e.Handle]; ok {
		c.mu.Unlock()
		return h, nil
	}
	spec := e.Handle.Spec()
	spec.Name = e.HandleKey + "#" + shortID(ss.ID())
	spec.Lazy = false
	spec.ClientRoots = true
	h := c.make(spec, c.peer)
	if rec.clients == nil {
		rec.clients = map[*upstream.Handle]*upstream.Handle{}
	}
	if c.owner == nil {
		c.owner = map[*upstream.Handle]*session.Session{}
	}
	rec.clients[e.Handle] = h
	c.owner[h] = ss
	c.n.Add(1)
	c.mu.Unlock()
	h.Start()
	c.log.Info("per-client upstream started", "upstream", spec.Name)
	return h, nil
}

// takePlace takes a place under maxSessions for the 2026-07-28 request of
// rec (once: rec.placed), waiting up to clientWait for one.
func (c *clientHandles) takePlace(ctx context.Context, e *view.ServerEntry, rec *record) error {
	limit := c.limit()
	held, err := c.held.takeWait(ctx, rec.pr, limit, clientWait)
	if err != nil {
		if errors.Is(err, session.ErrSessionLimit) {
			who := "this token"
			if rec.pr.TokenID == "" {
				who = "this endpoint"
			}
			return fmt.Errorf("%w: server %q runs an instance per client (isolation: per-client), and %s holds %d of %d places (maxSessions) in sessions and requests running such an instance; none freed in %s: retry when a call ends, or raise maxSessions",
				session.ErrSessionLimit, e.Key, who, held, limit, clientWait)
		}
		return err
	}
	c.mu.Lock()
	if rec.placed {
		c.mu.Unlock()
		c.held.give(rec.pr) // another request of the session took one first
		return nil
	}
	rec.placed = true
	c.mu.Unlock()
	return nil
}

// sessionOf returns the downstream session a per-client instance belongs
// to, or nil for a shared handle.
func (c *clientHandles) sessionOf(h *upstream.Handle) *session.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owner[h]
}

// of lists the per-client instances of rec's session.
func (c *clientHandles) of(rec *record) []*upstream.Handle {
	c.mu.Lock()
	defer c.mu.Unlock()
	hs := make([]*upstream.Handle, 0, len(rec.clients))
	for _, h := range rec.clients {
		hs = append(hs, h)
	}
	return hs
}

// Instances is what a server with isolation: per-client runs for its
// sessions now: its instances, and the calls they have in flight.
type Instances struct {
	Running  int
	InFlight int64
}

// instances counts, by shared handle, the instances running and their
// calls in flight; nil when there are none. The calls are counted after
// the lock is let go: an instance takes locks of its own.
func (c *clientHandles) instances() map[*upstream.Handle]Instances {
	if c.n.Load() == 0 {
		return nil
	}
	type pair struct{ shared, inst *upstream.Handle }
	var ps []pair
	c.mu.Lock()
	for inst, ss := range c.owner {
		rec := recordOf(ss)
		if rec == nil {
			continue
		}
		for shared, x := range rec.clients {
			if x == inst {
				ps = append(ps, pair{shared, inst})
			}
		}
	}
	c.mu.Unlock()
	m := make(map[*upstream.Handle]Instances, len(ps))
	for _, p := range ps {
		in := m[p.shared]
		in.Running++
		in.InFlight += p.inst.InFlight()
		m[p.shared] = in
	}
	return m
}

// closeOf stops the per-client instances of rec's session, then gives
// back the place a 2026-07-28 request took for them.
func (c *clientHandles) closeOf(rec *record) {
	if rec == nil {
		return
	}
	c.close(func(_ *upstream.Handle, r *record) bool { return r == rec })
	c.mu.Lock()
	placed := rec.placed
	rec.placed = false
	c.mu.Unlock()
	if placed {
		c.held.give(rec.pr)
	}
}

// closeWhere stops the per-client instances of shared handle h (nil: of
// every server), in every session.
func (c *clientHandles) closeWhere(h *upstream.Handle) {
	c.close(func(shared *upstream.Handle, _ *record) bool { return h == nil || shared == h })
}

// close stops the instances pick selects by their shared handle and their
// session's record, and takes them out of the records.
func (c *clientHandles) close(pick func(shared *upstream.Handle, rec *record) bool) {
	if c.n.Load() == 0 {
		return
	}
	c.mu.Lock()
	var hs []*upstream.Handle
	for inst, ss := range c.owner {
		rec := recordOf(ss)
		for shared, x := range rec.clients {
			if x == inst && pick(shared, rec) {
				hs = append(hs, inst)
				delete(rec.clients, shared)
				delete(c.owner, inst)
			}
		}
	}
	c.n.Add(-int32(len(hs)))
	c.mu.Unlock()
	c.stop(hs)
}

// stop closes instances in parallel, letting their calls finish for up to
// 30 s.
func (c *clientHandles) stop(hs []*upstream.Handle) {
	if len(hs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Go(func() {
			_ = h.Close(ctx)
			c.log.Info("per-client upstream stopped", "upstream", h.Name())
		})
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
