package dispatch

import (
	"context"
	"encoding/hex"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// forCaller is ctx naming the request's caller to the upstream's OAuth
// transport: a server whose tokens are per caller (token_exchange) sends
// the request with that caller's token, keyed by the principal's holder
// (a digest: of the identity provider's issuer and subject, or of a
// static token's value). A request without a principal (serve --stdio,
// no auth) names none, and such a server uses the one token it keeps.
func forCaller(ctx context.Context) context.Context {
	h := HeldIn(ctx)
	if h == nil || h.Principal.Holder == (Holder{}) {
		return ctx
	}
	return oauth.WithCaller(ctx, oauth.Caller{Principal: hex.EncodeToString(h.Principal.Holder[:]), Token: h.Credential})
}
