package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// authSlot holds a server's OAuth handler (Spec.OAuth), made at its first
// connect and kept across reconnects, so that a token outlives a session.
// A Spec whose oauth block changes is a new Handle, with a new slot.
type authSlot struct {
	store    func(ctx context.Context, c *oauth.Config) (oauth.Store, error)
	redact   func(string)
	consents *oauth.Consents

	mu sync.Mutex
	h  auth.OAuthHandler
}

// handler returns the server's handler, making it on first use for the
// endpoint url.
func (a *authSlot) handler(ctx context.Context, cn *connector, url string) (auth.OAuthHandler, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.h != nil {
		return a.h, nil
	}
	sp := cn.sp()
	var st oauth.Store
	if a.store != nil {
		var err error
		if st, err = a.store(ctx, sp.OAuth); err != nil {
			return nil, Permanent(err)
		}
	}
	eg, err := newEgress(*sp, cn.remoteKind(), url)
	if err != nil {
		return nil, err
	}
	p := oauth.Params{
		Key: oauth.Key{Server: sp.Name}, URL: url, Config: sp.OAuth, Expand: cn.expand, Store: st, Redact: a.redact, Consents: a.consents,
		// Discovery, registration and token requests go to the
		// authorization server, another origin as a rule: the egress
		// allow-list bounds them, not the server's own origin.
		Client: &http.Client{Transport: allowList{eg}, CheckRedirect: eg.checkAllowed},
	}
	var h auth.OAuthHandler
	if sp.OAuth.Grant == oauth.GrantTokenExchange || sp.OAuth.PerCaller {
		// A token per caller: the call's context names it.
		h, err = oauth.NewPerCaller(ctx, p)
	} else {
		h, err = oauth.New(ctx, p)
	}
	if errors.Is(err, oauth.ErrStoreUnreachable) {
		return nil, err // Vault may be back at the next start
	}
	if err != nil {
		return nil, Permanent(err)
	}
	a.h = h
	return h, nil
}

// allowList sends a request only to an origin on the egress allow-list.
type allowList struct{ eg *egress }

func (l allowList) RoundTrip(r *http.Request) (*http.Response, error) {
	if o := originOf(r.URL); !l.eg.allowed(o) {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, l.eg.refuse("%s is not on the egress allow-list", o)
	}
	return sharedTransport.RoundTrip(r)
}

// askConsent asks the caller of ctx (oauth.Asking) for the consent a
// server down for want of one needs: a request without a session goes to
// the server through its OAuth transport, whose 401 starts the in-band
// authorization. It returns the transport's error (oauth.ErrConsentAsked
// when the caller was asked), or nil when the server asked for nothing.
func (cn *connector) askConsent(ctx context.Context) error {
	cn.auth.mu.Lock()
	h := cn.auth.h
	cn.auth.mu.Unlock()
	if h == nil || !oauth.Asks(ctx) {
		return nil
	}
	url, headers, err := cn.expandRemote(ctx)
	if err != nil {
		return err
	}
	eg, err := newEgress(*cn.sp(), cn.remoteKind(), url)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"ping"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := httpClient(cn.sp().Name, headers, eg, h).Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return nil
}
