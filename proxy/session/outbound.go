package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outbound is a session's side toward its client beside the answers to
// the client's requests: the session's own stream, the notifications
// queued for it (outbox.go), and switchboard's own requests to the client
// waiting for their answers. It is safe for concurrent use.
type outbound struct {
	id   string          // the session's ID, for logs
	log  hclog.Logger    // the session's
	max  int             // bytes of params the outbox holds: Options.MaxQueued
	done <-chan struct{} // closed when the session closes
	lost func()          // ends the session: its client stopped reading

	out    atomic.Pointer[streamBox] // the session's own stream, if any
	outbox outbox                    // notifications for the own stream

	mu     sync.Mutex
	asks   map[jsonrpc.ID]chan *jsonrpc.Response // requests to the client waiting
	nextID atomic.Int64
}

type streamBox struct{ s Stream }

// stream is the session's own stream, or nil.
func (o *outbound) stream() Stream {
	if b := o.out.Load(); b != nil {
		return b.s
	}
	return nil
}

// setStream sets (nil: clears) the session's own stream.
func (o *outbound) setStream(out Stream) {
	if out == nil {
		o.out.Store(nil)
		return
	}
	o.out.Store(&streamBox{out})
}

// notifyOn writes a notification on out.
func notifyOn(ctx context.Context, out Stream, method string, params any) error {
	if out == nil {
		return ErrNoStream
	}
	raw, err := encode(params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return out.Write(ctx, &jsonrpc.Request{Method: method, Params: raw})
}

// ask sends a request to the client on out and waits for the answer.
func (o *outbound) ask(ctx context.Context, out Stream, method string, params any) (json.RawMessage, error) {
	if out == nil {
		return nil, ErrNoStream
	}
	raw, err := encode(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	id, _ := jsonrpc.MakeID("sb-" + strconv.FormatInt(o.nextID.Add(1), 10))
	ch := make(chan *jsonrpc.Response, 1)
	o.mu.Lock()
	select {
	case <-o.done:
		o.mu.Unlock()
		return nil, ErrClosed
	default:
	}
	if o.asks == nil { // made on first use: most sessions never ask
		o.asks = map[jsonrpc.ID]chan *jsonrpc.Response{}
	}
	o.asks[id] = ch
	o.mu.Unlock()
	forget := func() {
		o.mu.Lock()
		delete(o.asks, id)
		o.mu.Unlock()
	}
	if err := out.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		forget()
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		forget()
		_ = notifyOn(context.WithoutCancel(ctx), out, "notifications/cancelled", &mcp.CancelledParams{RequestID: id.Raw(), Reason: ctx.Err().Error()})
		return nil, ctx.Err()
	case <-o.done:
		return nil, ErrClosed
	}
}

// answered hands the client's answer to the request of switchboard's it
// answers, if that one still waits.
func (o *outbound) answered(m *jsonrpc.Response) {
	o.mu.Lock()
	ch := o.asks[m.ID]
	delete(o.asks, m.ID)
	o.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}
