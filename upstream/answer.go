package upstream

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What the client session does with the requests a server sends it.

// serverRequest answers a request from the server. Sampling and elicitation
// go to the call they belong to (by stream, or the only call in flight with
// a sink); everything else, and those with nowhere to go, are answered off
// the read loop by the hooks.
func (c *client) serverRequest(r *jsonrpc.Request) {
	switch r.Method {
	case "ping":
		c.answerAsync(r, func(context.Context) (json.RawMessage, error) { return json.RawMessage("{}"), nil })
		return
	case "sampling/createMessage", "elicitation/create":
		if p := c.callFor(r); p != nil {
			if !p.push(r) {
				c.answerAsync(r, func(context.Context) (json.RawMessage, error) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "switchboard: too many messages queued for the call"}
				})
			}
			return
		}
	case "roots/list":
	default:
		c.answerAsync(r, func(context.Context) (json.RawMessage, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "switchboard does not answer " + r.Method}
		})
		return
	}
	c.answerAsync(r, func(ctx context.Context) (json.RawMessage, error) {
		if c.hooks.request == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "switchboard does not answer " + r.Method}
		}
		return c.hooks.request(ctx, r.Method, r.Params)
	})
}

// callFor finds the call a server request belongs to: the one whose stream
// carried it, else the only call in flight that has a sink.
func (c *client) callFor(r *jsonrpc.Request) *pending {
	if p := c.relatedCall(r); p != nil && p.sink != nil {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var only *pending
	for _, p := range c.calls {
		if p.sink == nil {
			continue
		}
		if only != nil {
			return nil
		}
		only = p
	}
	return only
}

// answerAsync answers a server request on a goroutine of its own, bounded
// by maxServerRequests; the answer can be cancelled by the server.
func (c *client) answerAsync(r *jsonrpc.Request, answer func(context.Context) (json.RawMessage, error)) {
	select {
	case c.slots <- struct{}{}:
	default:
		answer = func(context.Context) (json.RawMessage, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "switchboard: too many requests from the server at once"}
		}
		c.spawn(func() {
			res, err := answer(c.ctx)
			c.reply(c.ctx, r.ID, res, err)
		})
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	c.serving[r.ID] = cancel
	c.mu.Unlock()
	started := c.spawn(func() {
		defer func() { <-c.slots }()
		defer cancel()
		res, err := answer(ctx)
		c.mu.Lock()
		delete(c.serving, r.ID)
		c.mu.Unlock()
		c.reply(c.ctx, r.ID, res, err)
	})
	if !started {
		<-c.slots
		cancel()
		c.mu.Lock()
		delete(c.serving, r.ID)
		c.mu.Unlock()
	}
}

// spawn runs f on a goroutine close waits for; once closing, f does not run.
func (c *client) spawn(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.wg.Go(f)
	return true
}

// reply writes the answer to a server request.
func (c *client) reply(ctx context.Context, id jsonrpc.ID, res json.RawMessage, err error) {
	resp := &jsonrpc.Response{ID: id, Result: res}
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		resp.Result, resp.Error = nil, we
	} else if len(res) == 0 {
		resp.Result = json.RawMessage("{}")
	}
	if werr := c.conn.Write(ctx, resp); werr != nil {
		c.log.Debug("answer to server request not sent", "error", werr)
	}
}
