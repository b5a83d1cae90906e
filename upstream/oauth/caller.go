package oauth

import (
	"context"
	"net/http"
	"sync"

	"golang.org/x/oauth2"
)

// Caller is the downstream caller a request to a server is made for: its
// principal, which keys its tokens in the Store (a digest, stable across
// restarts, never a token), and the access token of the identity
// provider it showed switchboard ("" with a static token), which
// token_exchange exchanges and which is never sent upstream itself.
type Caller struct {
	Principal string
	Token     string
}

type callerKey struct{}

// WithCaller returns ctx carrying c: the requests a call sends upstream
// on ctx are made for c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf is the caller ctx carries; ok is false for a request made for
// no caller (a connect, a catalog refresh, a ping).
func CallerOf(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok && c.Principal != ""
}

// PerCaller is the auth.OAuthHandler of a server whose tokens are per
// caller (token_exchange; authorization_code with perCaller, linked
// accounts): a request made for a caller (its context's Caller) uses that
// caller's Client, keyed (server, principal) in the store and made on the
// caller's first request; a request made for no caller (connecting,
// listing the catalog) uses the client's own token, obtained with
// client_credentials by the same client (token_exchange), or the one
// `auth login` keeps (authorization_code). One caller's token is never
// used for another's request.
type PerCaller struct {
	p   Params
	own *Client

	mu sync.Mutex
	m  map[string]*Client
}

// NewPerCaller builds the handler of p (p.Key.Principal is ignored).
func NewPerCaller(ctx context.Context, p Params) (*PerCaller, error) {
	p.Key.Principal = ""
	op := p
	if p.Config.Grant == GrantTokenExchange {
		c := *p.Config
		c.Grant = GrantClientCredentials
		op.Config = &c
	}
	own, err := New(ctx, op)
	if err != nil {
		return nil, err
	}
	return &PerCaller{p: p, own: own, m: map[string]*Client{}}, nil
}

// of is the Client of ctx's caller, made on first use.
func (pc *PerCaller) of(ctx context.Context) (*Client, error) {
	c, ok := CallerOf(ctx)
	if !ok {
		return pc.own, nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if h := pc.m[c.Principal]; h != nil {
		return h, nil
	}
	p := pc.p
	p.Key.Principal = c.Principal
	h, err := New(ctx, p)
	if err != nil {
		return nil, err
	}
	pc.m[c.Principal] = h
	return h, nil
}

func (pc *PerCaller) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h, err := pc.of(ctx)
	if err != nil {
		return nil, err
	}
	return h.TokenSource(ctx)
}

func (pc *PerCaller) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h, err := pc.of(ctx)
	if err != nil {
		resp.Body.Close()
		return err
	}
	return h.Authorize(ctx, req, resp)
}
