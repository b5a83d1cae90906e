package upstream

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// deliver hands a response to its call. A response nobody waits for is
// dropped: a late one to a call given up on quietly, any other (an ID
// never sent, a second answer) counted as the server's fault.
func (c *client) deliver(r *jsonrpc.Response) {
	c.mu.Lock()
	p := c.calls[r.ID]
	late := false
	if p != nil {
		delete(c.calls, r.ID)
		if p.token != "" {
			delete(c.progress, p.token)
		}
	} else {
		late = c.gaveUp.takeLocked(r.ID)
	}
	c.mu.Unlock()
	if p == nil {
		if late || c.hooks.stray == nil {
			c.log.Debug("answer to no call in flight dropped", "request_id", r.ID.Raw())
		} else {
			c.hooks.stray.note(r.ID)
		}
		return
	}
	p.mu.Lock()
	p.resp = r
	p.mu.Unlock()
	p.wake()
}

// forget unregisters a call that will not read its response; an answer
// that still comes is late, not stray.
func (c *client) forget(p *pending) {
	c.mu.Lock()
	if _, ok := c.calls[p.id]; ok {
		delete(c.calls, p.id)
		c.gaveUp.addLocked(p.id)
	}
	if p.token != "" {
		delete(c.progress, p.token)
	}
	c.mu.Unlock()
}

// strayWarnEvery is how often a server that keeps answering calls nobody
// made is named again at WARN; in between, its answers are only counted
// (and logged at DEBUG).
const strayWarnEvery = time.Minute

// maxAbandoned is how many given-up calls a connection remembers, so
// their late answers are not taken for a fault.
const maxAbandoned = 1024

// strayAnswers counts one server's answers to no call switchboard made or
// still remembers (an ID it never sent, such as a string ID the server
// echoes wrongly, or a second answer to one call), across its restarts.
// Such an answer is dropped, and is a fault of the server: the first one is
// logged at WARN with the count so far, then at most one WARN per
// strayWarnEvery with the count, never one line per answer. Safe for
// concurrent use.
type strayAnswers struct {
	log hclog.Logger
	n   atomic.Int64

	mu     sync.Mutex
	warned time.Time // the last WARN; zero before the first
	since  int64     // n at the last WARN
}

// note counts one stray answer with the given ID.
func (s *strayAnswers) note(id jsonrpc.ID) {
	n := s.n.Add(1)
	s.log.Debug("answer to no call in flight dropped", "request_id", id.Raw())
	s.mu.Lock()
	now := time.Now()
	if !s.warned.IsZero() && now.Sub(s.warned) < strayWarnEvery {
		s.mu.Unlock()
		return
	}
	s.warned, s.since = now, n
	s.mu.Unlock()
	s.log.Warn("server answers calls that are not in flight; answers dropped", "count", n, "request_id", id.Raw())
}

// count is the stray answers counted so far.
func (s *strayAnswers) count() int64 { return s.n.Load() }

// abandoned remembers the IDs of the last maxAbandoned calls a client gave
// up on (cancelled, or not sent): an answer to one of them is late, not
// stray. Guarded by the client's mu.
type abandoned struct {
	ids  map[jsonrpc.ID]struct{}
	ring []jsonrpc.ID
	next int
}

// addLocked remembers id, forgetting the oldest beyond maxAbandoned.
func (a *abandoned) addLocked(id jsonrpc.ID) {
	if a.ids == nil {
		a.ids = map[jsonrpc.ID]struct{}{}
	}
	if len(a.ring) < maxAbandoned {
		a.ring = append(a.ring, id)
	} else {
		delete(a.ids, a.ring[a.next])
		a.ring[a.next] = id
		a.next = (a.next + 1) % maxAbandoned
	}
	a.ids[id] = struct{}{}
}

// takeLocked reports whether id was given up on; an answer to it is
// expected once, so it is forgotten.
func (a *abandoned) takeLocked(id jsonrpc.ID) bool {
	if _, ok := a.ids[id]; !ok {
		return false
	}
	delete(a.ids, id)
	return true
}

// setDirect makes a call's response that is the first message of its
// stream go to f on the goroutine that read the stream, instead of through
// Read and the read loop: the caller waiting for the answer is woken with
// one goroutine hand-off less. A response that comes after other messages
// of its stream (progress, a log message, a server request) still goes
// through Read behind them, so a call sees what the server sent about it
// before its answer. It must be called before the first Write.
func (c *streamableConn) setDirect(f func(*jsonrpc.Response)) { c.direct = f }

// handOn gives m to the direct function when it is the response to call
// and the first message of its stream, and reports whether it did.
func (c *streamableConn) handOn(m jsonrpc.Message, call jsonrpc.ID) bool {
	r, ok := m.(*jsonrpc.Response)
	if !ok || c.direct == nil || !call.IsValid() || r.ID != call || c.failure() != nil {
		return false
	}
	c.noteInitialize(r)
	c.direct(r)
	return true
}
