package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Errors of an in-band consent flow's steps.
var (
	// ErrFlowUnknown: no flow under way has that id or state (never
	// opened, already used, or forgotten after it expired).
	ErrFlowUnknown = errors.New("consent flow: unknown or already used")
	// ErrFlowExpired: the flow was not completed in time.
	ErrFlowExpired = errors.New("consent flow: expired")
	// ErrFlowPrincipal: the flow was started for another caller.
	ErrFlowPrincipal = errors.New("consent flow: started for another caller")
	// ErrFlowBrowser: the redirect came back to a browser that did not
	// start the flow (its binding cookie is missing or another's).
	ErrFlowBrowser = errors.New("consent flow: the redirect reached a browser that did not start it")
)

// DefaultConsentTTL is how long an in-band consent flow may take, from
// the call that opened it to the redirect that completes it.
const DefaultConsentTTL = 10 * time.Minute

// Consents are the in-band authorization_code flows under way: a call
// that needs a caller's consent opens one (Open), the caller's browser
// starts it at switchboard's start URL (Start, which checks the caller is
// the one the flow was opened for and binds the flow to that browser),
// and the authorization server's redirect completes it (Complete, which
// checks the binding and hands the code to the flow's waiter, Wait).
// Each flow is bound to the principal that opened it, is used once, and
// expires.
//
// Consents also owns the in-band authorizations waiting on its flows
// (run): Close ends them and waits for them.
type Consents struct {
	ttl  time.Duration
	now  func() time.Time
	life context.Context // ends at Close
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	byID    map[string]*Flow
	byState map[string]*Flow
	closed  bool
}

// NewConsents returns an empty set whose flows expire after ttl
// (DefaultConsentTTL when ttl <= 0).
func NewConsents(ttl time.Duration) *Consents {
	if ttl <= 0 {
		ttl = DefaultConsentTTL
	}
	life, stop := context.WithCancel(context.Background())
	return &Consents{ttl: ttl, now: time.Now, life: life, stop: stop, byID: map[string]*Flow{}, byState: map[string]*Flow{}}
}

// run runs f on a goroutine of c's, with a context Close ends; false, and
// f not run, once Close began.
func (c *Consents) run(f func(ctx context.Context)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(c.life)
	}()
	return true
}

// Close ends the authorizations waiting on c's flows (their callers are
// told, as for a flow that expired) and waits for them. It is idempotent
// and safe to call concurrently.
func (c *Consents) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stop()
	c.wg.Wait()
}

// Flow is one in-band consent under way.
type Flow struct {
	ID        string // in the start URL; random, not the OAuth state
	Server    string
	Principal string
	Label     string // names the caller on the start page

	authURL string
	state   string
	expires time.Time
	binding string // set by Start: the browser's cookie value
	started bool
	done    chan *auth.AuthorizationResult
	outcome *pendingConsent // the authorization waiting on the flow; nil: none (set under Consents.mu)
}

// Open registers a flow of server for principal ("": switchboard's own
// token, no caller identity) whose authorization URL (with its state
// parameter) is authURL.
func (c *Consents) Open(server, principal, authURL string) (*Flow, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, fmt.Errorf("consent flow of %q: authorization URL: %w", server, err)
	}
	state := u.Query().Get("state")
	if state == "" {
		return nil, fmt.Errorf("consent flow of %q: the authorization URL has no state", server)
	}
	f := &Flow{ID: random(), Server: server, Principal: principal, authURL: authURL, state: state,
		done: make(chan *auth.AuthorizationResult, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepLocked()
	f.expires = c.now().Add(c.ttl)
	c.byID[f.ID] = f
	c.byState[state] = f
	return f, nil
}

// Peek is the flow id names, if it can still be started.
func (c *Consents) Peek(id string) (server, principal, label string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.byID[id]
	if f == nil || f.started || !c.now().Before(f.expires) {
		return "", "", "", false
	}
	return f.Server, f.Principal, f.Label, true
}

// Start is the caller's browser at the start URL of flow id, as
// principal: it returns the authorization URL to redirect to and the
// binding the browser must bring back to the callback (a cookie). A flow
// starts once, and only for the principal it was opened for.
func (c *Consents) Start(id, principal string) (authURL, binding string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.byID[id]
	if f == nil || f.started {
		return "", "", ErrFlowUnknown
	}
	if !c.now().Before(f.expires) {
		c.dropLocked(f)
		return "", "", ErrFlowExpired
	}
	if f.Principal != principal {
		return "", "", ErrFlowPrincipal
	}
	f.started, f.binding = true, random()
	return f.authURL, f.binding, nil
}

// Complete is the authorization server's redirect with state, code and
// iss, arriving at a browser that brings bindings (its consent cookies;
// one must be the flow's): the flow's waiter (Wait) gets the code. The
// flow is used up whatever the outcome, but for a redirect that names no
// flow; a refused one ends its waiter without a code.
func (c *Consents) Complete(state string, bindings []string, code, iss string) (*Flow, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.byState[state]
	if f == nil || !f.started {
		return nil, ErrFlowUnknown
	}
	c.dropLocked(f)
	if !c.now().Before(f.expires) {
		f.done <- &auth.AuthorizationResult{} // its fetcher ends without a code
		return nil, ErrFlowExpired
	}
	if !slices.ContainsFunc(bindings, func(b string) bool { return subtle.ConstantTimeCompare([]byte(b), []byte(f.binding)) == 1 }) {
		// The flow is spent: its fetcher ends without a code, so that the
		// next call that needs the consent opens a new one.
		f.done <- &auth.AuthorizationResult{}
		return nil, ErrFlowBrowser
	}
	f.done <- &auth.AuthorizationResult{Code: code, State: state, Iss: iss} // buffered; sent once
	return f, nil
}

// Wait returns the flow's authorization result once Complete delivers
// it; ErrFlowExpired when the flow expires first.
func (c *Consents) Wait(ctx context.Context, f *Flow) (*auth.AuthorizationResult, error) {
	t := time.NewTimer(time.Until(f.expires))
	defer t.Stop()
	select {
	case r := <-f.done:
		if r.Code == "" {
			return nil, fmt.Errorf("upstream %q %w: the consent was refused", f.Server, ErrConsent)
		}
		return r, nil
	case <-t.C:
		c.mu.Lock()
		c.dropLocked(f)
		c.mu.Unlock()
		return nil, ErrFlowExpired
	case <-ctx.Done():
		c.mu.Lock()
		c.dropLocked(f)
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// dropLocked forgets f. It requires c.mu.
func (c *Consents) dropLocked(f *Flow) {
	if c.byID[f.ID] == f {
		delete(c.byID, f.ID)
	}
	if c.byState[f.state] == f {
		delete(c.byState, f.state)
	}
}

// sweepLocked forgets the expired flows. It requires c.mu.
func (c *Consents) sweepLocked() {
	now := c.now()
	for _, f := range c.byID {
		if !now.Before(f.expires) {
			c.dropLocked(f)
		}
	}
}

// random is 32 random bytes, base64url.
func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// CallbackPath is the path of switchboard's redirect URI for in-band
// consent: a server whose redirectUri has it (on switchboard's own
// listener) can be consented to in band.
const CallbackPath = "/oauth/callback"

// StartPath prefixes a flow's start URL on switchboard's listener.
const StartPath = "/oauth/start/"

// ErrConsentAsked matches a call that needs a person's consent and whose
// caller was asked for it in band (Asking): the call is answered with the
// URL to open, and retried once the consent is given.
var ErrConsentAsked = errors.New("needs consent, asked in band")

// ConsentNeed is what a caller is sent when a server needs consent: a
// URL-mode elicitation.
type ConsentNeed struct {
	Server        string
	ElicitationID string
	URL           string // switchboard's start URL of the flow
	Message       string
}

// Asking is a call's offer to take a person's consent in band: its
// client takes URL-mode elicitations. A server that needs consent
// records the elicitation here (Need); Complete is called with its
// elicitation ID once the consent ends, given or not, so that the client
// retries (notifications/elicitation/complete).
type Asking struct {
	Complete func(elicitationID string)
	// Principal is the caller's ("": no identity of its own). A server's
	// own token (auth login's) is consented to only by a caller without
	// one; a caller's own token (perCaller) only by that caller.
	Principal string
	// Label names the caller to the person at the start URL (e.g. the
	// identity provider's subject): a person who did not ask sees it is
	// not theirs.
	Label string

	mu   sync.Mutex
	need *ConsentNeed
}

// Need is the consent the call was refused for; nil: none.
func (a *Asking) Need() *ConsentNeed {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.need
}

func (a *Asking) set(n ConsentNeed) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.need = &n
}

type askingKey struct{}

// WithAsking is ctx offering in-band consent through a.
func WithAsking(ctx context.Context, a *Asking) context.Context {
	return context.WithValue(ctx, askingKey{}, a)
}

// Asks reports whether ctx offers to ask its caller for consent.
func Asks(ctx context.Context) bool { return askingOf(ctx) != nil }

// Reconnecting makes ctx's Asking, if any, run first before it tells its
// caller a consent ended: the server's connection comes back, so that
// the call made again finds it.
func Reconnecting(ctx context.Context, first func()) {
	a := askingOf(ctx)
	if a == nil || a.Complete == nil {
		return
	}
	tell := a.Complete
	a.Complete = func(id string) {
		first()
		tell(id)
	}
}

func askingOf(ctx context.Context) *Asking {
	a, _ := ctx.Value(askingKey{}).(*Asking)
	return a
}

// inBandBase is the origin of redirect when its path is CallbackPath: the
// base of the start URLs; "" when consent cannot be taken in band.
func inBandBase(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil || u.Path != CallbackPath || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
