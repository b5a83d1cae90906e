package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// pendingConsent is a server's in-band authorization under way: the
// grant's Authorize, run apart from the call that needed it, until the
// person's redirect comes back or the flow expires.
type pendingConsent struct {
	ready     chan struct{} // closed once the URL is known, or the authorization ended
	readyOnce sync.Once
	ended     chan struct{} // closed once the authorization ended (done, err set)

	label string // the caller's, for the start page

	mu      sync.Mutex
	need    *ConsentNeed
	done    bool
	err     error
	waiters []func()
}

func (p *pendingConsent) signal() { p.readyOnce.Do(func() { close(p.ready) }) }

type pendingKey struct{}

// inBand answers a call that needs consent when its caller can be asked:
// the server's authorization runs in the background (one at a time,
// which every call that needs it joins), the call learns the URL to send
// its caller (a.Need) and fails with ErrConsentAsked; a.Complete is
// called when the authorization ends. An authorization that needed no
// person (a refresh, a consent given meanwhile) returns its own outcome,
// and the call is sent again.
func (h *Client) inBand(ctx context.Context, req *http.Request, resp *http.Response, a *Asking) error {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h.mu.Lock()
	p := h.pending
	if p == nil {
		p = &pendingConsent{ready: make(chan struct{}), ended: make(chan struct{}), label: a.Label}
		// The authorization outlives the call: it gets a request and a
		// response of its own (headers only; it reads no body).
		r := req.Clone(context.Background())
		r.Body, r.GetBody = http.NoBody, nil
		copied := &http.Response{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header.Clone(), Body: http.NoBody, Request: r}
		inner := h.inner
		if !h.p.Consents.run(func(life context.Context) { h.authorizeInBand(life, inner, r, copied, p) }) {
			h.mu.Unlock()
			return fmt.Errorf("upstream %q %w: switchboard is stopping", h.p.Key.Server, ErrConsent)
		}
		h.pending = p
	}
	h.mu.Unlock()
	select {
	case <-p.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return p.err
	}
	if complete, id := a.Complete, p.need.ElicitationID; complete != nil {
		p.waiters = append(p.waiters, func() { complete(id) })
	}
	a.set(*p.need)
	return fmt.Errorf("upstream %q %w: open %s", h.p.Key.Server, ErrConsentAsked, p.need.URL)
}

// authorizeInBand runs inner's Authorize for p until the flow it opens
// ends (or life does), then tells every call that was asked.
func (h *Client) authorizeInBand(life context.Context, inner auth.OAuthHandler, req *http.Request, resp *http.Response, p *pendingConsent) {
	ctx, cancel := context.WithTimeout(context.WithValue(life, pendingKey{}, p), h.p.Consents.ttl+time.Minute)
	defer cancel()
	err := inner.Authorize(ctx, req, resp)
	h.mu.Lock()
	if h.pending == p {
		h.pending = nil
	}
	h.mu.Unlock()
	p.mu.Lock()
	p.done, p.err = true, err
	waiters := p.waiters
	p.mu.Unlock()
	close(p.ended)
	p.signal()
	for _, w := range waiters {
		w()
	}
}

// fetch is authorization_code's person's part: auth login's fetcher when
// set; in band, a flow opened for the pending authorization, whose URL
// the waiting calls send their callers; else ErrConsent.
func (h *Client) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	if h.p.Fetcher != nil {
		return h.p.Fetcher(ctx, args)
	}
	server := h.p.Key.Server
	p, _ := ctx.Value(pendingKey{}).(*pendingConsent)
	if p == nil || h.p.Consents == nil {
		return nil, fmt.Errorf("upstream %q %w: run `switchboard auth login %s`", server, ErrConsent, server)
	}
	f, err := h.p.Consents.Open(server, h.p.Key.Principal, args.URL)
	if err != nil {
		return nil, err
	}
	h.p.Consents.mu.Lock()
	f.Label, f.outcome = p.label, p
	h.p.Consents.mu.Unlock()
	need := ConsentNeed{Server: server, ElicitationID: random()[:22], URL: h.startBase + StartPath + f.ID,
		Message: fmt.Sprintf("The server %q needs your consent: open the URL to sign in there and let switchboard act for you; the call is retried once you have.", server)}
	p.mu.Lock()
	p.need = &need
	p.mu.Unlock()
	p.signal()
	return h.p.Consents.Wait(ctx, f)
}

// outcomeWait bounds how long the callback waits for the code it
// delivered to be exchanged, so that it tells the person whether the
// consent was given.
const outcomeWait = 30 * time.Second

// settled is how the authorization f's code was delivered to ended
// (ended false when it did not end within outcomeWait or ctx, or no
// authorization waits on f): err is nil once the token is kept, else why
// it could not be had (the code refused at the token endpoint, an iss
// that names another issuer, …).
func (f *Flow) settled(ctx context.Context) (ended bool, err error) {
	p := f.outcome
	if p == nil {
		return false, nil
	}
	t := time.NewTimer(outcomeWait)
	defer t.Stop()
	select {
	case <-p.ended:
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return true, p.err
}
