package dispatch

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// consent is a call's offer to have its caller consent in band to a
// server that needs it (oauth.Asking), from a client that declared
// URL-mode elicitation. The caller's principal goes with it: a server's
// one token is consented to only by a caller with no identity of its own
// (serve --stdio, a sidecar without downstream auth), since in a view of
// many callers none of them may choose the account everyone's calls use;
// a caller's own token (perCaller, linked accounts) only by that caller.
//
// A 2025-11-25 client is answered with the URL elicitation error (-32042)
// and told on its session's stream when the consent ends
// (notifications/elicitation/complete), then calls again. A 2026-07-28
// client keeps no such stream: its call asks for the URL as an MRTR input
// request, waits for the consent once the client's retry accepted it, and
// is sent to the server again.
type consent struct {
	a      *oauth.Asking
	modern bool
	done   chan struct{} // closed when the consent ends (modern)
	once   sync.Once
}

// consentOffer is ctx offering req's caller to be asked for a consent h's
// server needs (nil: it cannot be, or the server never needs one).
func consentOffer(ctx context.Context, req *session.Request, h *upstream.Handle) (context.Context, *consent) {
	if !h.AsksConsent() || req == nil || req.Session == nil || !session.CanElicit(req.ClientCapabilities(), "url") {
		return ctx, nil
	}
	var principal, label string
	if h := HeldIn(ctx); h != nil && h.Principal.Holder != (Holder{}) {
		principal, label = hex.EncodeToString(h.Principal.Holder[:]), h.Principal.TokenID
	}
	c := &consent{modern: req.Modern()}
	if c.modern {
		c.done = make(chan struct{})
		c.a = &oauth.Asking{Complete: func(string) { c.once.Do(func() { close(c.done) }) }}
	} else {
		ss := req.Session
		c.a = &oauth.Asking{Complete: func(id string) {
			_ = ss.Notify(context.Background(), "notifications/elicitation/complete", &mcp.ElicitationCompleteParams{ElicitationID: id})
		}}
	}
	c.a.Principal, c.a.Label = principal, label
	return oauth.WithAsking(ctx, c.a), c
}

// need is the consent the call was refused for; nil: none.
func (c *consent) need() *oauth.ConsentNeed {
	if c == nil {
		return nil
	}
	return c.a.Need()
}

// required is the answer to a legacy client's call refused for a consent
// its caller was asked for: the protocol's "URL elicitation required"
// error naming switchboard's start URL of the consent.
func (c *consent) required(n *oauth.ConsentNeed) error {
	return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", ElicitationID: n.ElicitationID, URL: n.URL, Message: n.Message}})
}

// consentWait bounds how long a 2026-07-28 call waits for the consent its
// client accepted to open.
const consentWait = oauth.DefaultConsentTTL

// given asks a 2026-07-28 client for the consent n (an MRTR input
// request) and waits for it to end; it reports whether the call should be
// sent again: the client accepted, and the consent ended in time.
func (c *consent) given(ctx context.Context, req *session.Request, n *oauth.ConsentNeed) bool {
	raw, err := req.Ask(ctx, "elicitation/create", &mcp.ElicitParams{Mode: "url", ElicitationID: n.ElicitationID, URL: n.URL, Message: n.Message})
	if err != nil {
		return false
	}
	var res mcp.ElicitResult
	if json.Unmarshal(raw, &res) != nil || res.Action != "accept" {
		return false
	}
	t := time.NewTimer(consentWait)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}
