package dispatch

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// consentOffer is ctx letting a server's OAuth client ask this call's
// caller for a person's consent in band, with the Asking it records the
// need in; ctx as it is, and nil, when the caller cannot be asked. Only a
// caller with no identity of its own (serve --stdio, a sidecar without
// downstream auth) is asked: the token it consents to is switchboard's
// one token for the server, and in a view of many callers none of them
// may choose the account everyone's calls use. Its client must have
// declared URL-mode elicitation, in a session of an earlier protocol than
// 2026-07-28: the retry waits for notifications/elicitation/complete on
// the session's stream, which a 2026-07-28 client does not keep (it gets
// the tool error that says to run `switchboard auth login`).
func consentOffer(ctx context.Context, req *session.Request) (context.Context, *oauth.Asking) {
	if req == nil || req.Session == nil || req.Modern() || !session.CanElicit(req.ClientCapabilities(), "url") {
		return ctx, nil
	}
	if h := HeldIn(ctx); h != nil && h.Principal.Holder != (Holder{}) {
		return ctx, nil
	}
	ss := req.Session
	a := &oauth.Asking{Complete: func(id string) {
		_ = ss.Notify(context.Background(), "notifications/elicitation/complete", &mcp.ElicitationCompleteParams{ElicitationID: id})
	}}
	return oauth.WithAsking(ctx, a), a
}

// consentRequired is the answer to a call refused because its server
// needs consent that a asked its caller for: the protocol's "URL
// elicitation required" error (-32042) naming switchboard's start URL of
// the consent; nil when a asked for none.
func consentRequired(a *oauth.Asking) error {
	if a == nil {
		return nil
	}
	n := a.Need()
	if n == nil {
		return nil
	}
	return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", ElicitationID: n.ElicitationID, URL: n.URL, Message: n.Message}})
}
