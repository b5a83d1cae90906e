package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 server has no resources/subscribe: a client names the
// resources it wants notifications/resources/updated for in a
// subscriptions/listen request, which stays open for as long as it wants
// them. switchboard opens one such request per subscribed URI and cancels
// it at the unsubscribe; the updates reach the hooks as a legacy server's
// do. A subscribe returns once the server acknowledged the URI (or
// refused it). The listens end with the client, and restore opens them
// again on the next one.

// watches are a client's open resource listens, by URI.
type watches struct {
	mu   sync.Mutex
	open map[string]*watching
}

// watching is one open listen.
type watching struct {
	cancel context.CancelFunc
	acked  chan struct{} // closed when the server acknowledged the URI
	ended  chan struct{} // closed when the listen ended; err says why
	err    error
	once   sync.Once
}

// watchResource opens subscriptions/listen for uri's updates, unless one
// is open already, and waits (within ctx) for the server to acknowledge
// it. The listen runs until unwatchResource or the client's close.
func (c *client) watchResource(ctx context.Context, uri string) error {
	c.watch.mu.Lock()
	w := c.watch.open[uri]
	if w == nil {
		lctx, cancel := context.WithCancel(c.ctx)
		w = &watching{cancel: cancel, acked: make(chan struct{}), ended: make(chan struct{})}
		if c.watch.open == nil {
			c.watch.open = map[string]*watching{}
		}
		c.watch.open[uri] = w
		params := &mcp.SubscriptionsListenParams{Notifications: &mcp.NotificationSubscriptions{ResourceSubscriptions: []string{uri}}}
		if !c.spawn(func() { c.listenResource(lctx, uri, w, params) }) {
			delete(c.watch.open, uri)
			cancel()
			c.watch.mu.Unlock()
			return fmt.Errorf("%w: subscriptions/listen", ErrConnectionClosed)
		}
	}
	c.watch.mu.Unlock()
	select {
	case <-w.acked:
		return nil
	case <-w.ended:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listenResource runs uri's listen until it ends.
func (c *client) listenResource(ctx context.Context, uri string, w *watching, params *mcp.SubscriptionsListenParams) {
	_, err := c.call(ctx, "subscriptions/listen", params, nil)
	select {
	case <-w.acked:
		if err != nil && ctx.Err() == nil {
			c.log.Warn("upstream resource updates not heard", "uri", uri, "error", err)
		}
	default:
		if err == nil {
			err = fmt.Errorf("the server did not accept a subscription to %s", uri)
		}
		w.err = err
	}
	c.watch.mu.Lock()
	if c.watch.open[uri] == w {
		delete(c.watch.open, uri) // a new subscribe opens it again
	}
	c.watch.mu.Unlock()
	w.cancel()
	close(w.ended)
}

// acknowledged marks the listens of the URIs a
// notifications/subscriptions/acknowledged names as accepted.
func (c *client) acknowledged(params json.RawMessage) {
	var p mcp.SubscriptionsAcknowledgedParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	for uri, w := range c.watch.open {
		if slices.Contains(p.Notifications.ResourceSubscriptions, uri) {
			w.once.Do(func() { close(w.acked) })
		}
	}
}

// unwatchResource closes uri's listen, if one is open.
func (c *client) unwatchResource(uri string) {
	c.watch.mu.Lock()
	w := c.watch.open[uri]
	delete(c.watch.open, uri)
	c.watch.mu.Unlock()
	if w != nil {
		w.cancel()
	}
}
