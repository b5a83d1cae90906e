package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What the session sends on its own stream outside any request (list
// changes, resource updates, log messages) goes through its outbox: a
// sender (an upstream's read loop, a reload announcing to every session)
// never waits for one client to read. One goroutine at a time writes what
// is queued, in order, and exits once the queue is empty.
//
// The queue is bounded by MaxQueued bytes. A notification that does not
// fit is dropped and counted; a list_changed notification is never dropped
// but not queued twice (one says it all). A client that has not taken a
// byte of its stream for the transport's write deadline loses the session.

// DefaultMaxQueued is Options.MaxQueued when left zero: 1 MiB.
const DefaultMaxQueued = 1 << 20

// outbox is a session's queue of notifications for its own stream.
type outbox struct {
	mu      sync.Mutex
	queue   []*jsonrpc.Request
	size    int  // bytes of params queued
	writing bool // a sender goroutine is running
	dropped int  // notifications dropped since the last report
}

// post queues a notification for the session's own stream and starts its
// sender when none is running; the sender writes with ctx, the session's.
// It never waits for the client.
func (o *outbound) post(ctx context.Context, msg *jsonrpc.Request) error {
	select {
	case <-o.done:
		return ErrClosed
	default:
	}
	out := o.stream()
	if out == nil {
		return ErrNoStream
	}
	if l, ok := out.(Listener); ok && !l.Listening() {
		return ErrNoStream
	}
	ob := &o.outbox
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if coalesces(msg.Method) {
		for _, q := range ob.queue {
			if q.Method == msg.Method {
				return nil
			}
		}
	} else if ob.size+len(msg.Params) > o.max {
		ob.dropped++
		if ob.dropped == 1 {
			o.log.Warn("notification dropped: the client is not keeping up with its stream",
				"session_id", o.id, "method", msg.Method, "queued_bytes", ob.size)
		}
		return nil
	}
	ob.queue = append(ob.queue, msg)
	ob.size += len(msg.Params)
	if !ob.writing {
		ob.writing = true
		go o.send(ctx)
	}
	return nil
}

// coalesces reports whether a queued notification of the method makes
// another one redundant.
func coalesces(method string) bool {
	return strings.HasSuffix(method, "/list_changed")
}

// send writes what is queued until the queue is empty or the session ends.
func (o *outbound) send(ctx context.Context) {
	ob := &o.outbox
	for {
		ob.mu.Lock()
		batch, dropped := ob.queue, ob.dropped
		ob.queue, ob.size, ob.dropped = nil, 0, 0
		if len(batch) == 0 {
			ob.writing = false
			ob.mu.Unlock()
			return
		}
		ob.mu.Unlock()
		if dropped > 1 {
			o.log.Warn("notifications dropped: the client is not keeping up with its stream",
				"session_id", o.id, "dropped", dropped)
		}
		for _, msg := range batch {
			if !o.write(ctx, msg) {
				ob.mu.Lock()
				ob.queue, ob.size, ob.writing = nil, 0, false
				ob.mu.Unlock()
				return
			}
		}
	}
}

// write sends one queued notification; false once the session is over for
// the sender.
func (o *outbound) write(ctx context.Context, msg *jsonrpc.Request) bool {
	select {
	case <-o.done:
		return false
	default:
	}
	out := o.stream()
	if out == nil {
		return true // no stream now: the notification has nowhere to go
	}
	err := out.Write(ctx, msg)
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	// Not a byte taken for the whole write deadline: the client stopped
	// reading. Its session ends (Close waits for nothing of this goroutine).
	o.outbox.mu.Lock()
	dropped := o.outbox.dropped
	o.outbox.mu.Unlock()
	o.log.Warn("downstream session closed", "session_id", o.id,
		"reason", "the client stopped reading its stream", "dropped", dropped, "error", err)
	go o.lost()
	return false
}

// notify sends a notification on the session's own stream through its
// outbox.
func (o *outbound) notify(ctx context.Context, method string, params any) error {
	raw, err := encode(params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return o.post(ctx, &jsonrpc.Request{Method: method, Params: raw})
}
