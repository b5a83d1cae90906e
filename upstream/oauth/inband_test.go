package oauth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

const testAuthURL = "https://as.example/authorize?client_id=sb&state=st-4d1e&code_challenge=x"

// TestConsentFlowBinding: a flow starts only for the principal it was
// opened for (another caller cannot start, nor use up, alice's), and its
// redirect completes it only at the browser that started it; the code
// then reaches the flow's waiting fetcher, once.
func TestConsentFlowBinding(t *testing.T) {
	c := NewConsents(time.Minute)
	f, err := c.Open("notion", "alice", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Start(f.ID, "mallory"); !errors.Is(err, ErrFlowPrincipal) {
		t.Fatalf("another caller started alice's flow: %v", err)
	}
	if _, err := c.Complete("st-4d1e", []string{""}, "code-1", ""); !errors.Is(err, ErrFlowUnknown) {
		t.Fatalf("a redirect completed a flow no browser started: %v", err)
	}
	u, binding, err := c.Start(f.ID, "alice")
	if err != nil || u != testAuthURL || binding == "" {
		t.Fatalf("alice's start: %q %q %v", u, binding, err)
	}
	if _, err := c.Complete("st-4d1e", []string{binding}, "code-1", "https://as.example"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Wait(ctx, f)
	if err != nil || r.Code != "code-1" || r.State != "st-4d1e" || r.Iss != "https://as.example" {
		t.Fatalf("wait: %+v %v", r, err)
	}
}

// TestConsentFlowWrongBrowser: a redirect that reaches a browser without
// the start's binding (a phished victim's, a forged one) delivers no code
// and uses the flow up.
func TestConsentFlowWrongBrowser(t *testing.T) {
	c := NewConsents(time.Minute)
	f, err := c.Open("notion", "alice", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	_, binding, err := c.Start(f.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete("st-4d1e", []string{"another browser's"}, "code-1", ""); !errors.Is(err, ErrFlowBrowser) {
		t.Fatalf("a redirect at another browser: %v", err)
	}
	if _, err := c.Complete("st-4d1e", []string{binding}, "code-2", ""); !errors.Is(err, ErrFlowUnknown) {
		t.Fatalf("the flow survived a forged redirect: %v", err)
	}
	// Its fetcher ends without a code, so that the next call opens a new
	// flow.
	if _, err := c.Wait(context.Background(), f); !errors.Is(err, ErrConsent) {
		t.Fatalf("the spent flow's fetcher: %v, want a refused consent", err)
	}
}

// TestConsentFlowSingleUse: a flow starts once and completes once.
func TestConsentFlowSingleUse(t *testing.T) {
	c := NewConsents(time.Minute)
	f, err := c.Open("notion", "alice", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	_, binding, err := c.Start(f.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Start(f.ID, "alice"); !errors.Is(err, ErrFlowUnknown) {
		t.Fatalf("a second start: %v", err)
	}
	if _, err := c.Complete("st-4d1e", []string{binding}, "code-1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete("st-4d1e", []string{binding}, "code-1", ""); !errors.Is(err, ErrFlowUnknown) {
		t.Fatalf("a replayed redirect: %v", err)
	}
}

// TestConsentFlowExpiry: a flow neither starts nor completes after its
// time, and an expired flow is forgotten by the next Open.
func TestConsentFlowExpiry(t *testing.T) {
	c := NewConsents(time.Minute)
	now := time.Now()
	c.now = func() time.Time { return now }
	f, err := c.Open("notion", "alice", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Open("notion", "alice", "https://as.example/authorize?state=st-2")
	if err != nil {
		t.Fatal(err)
	}
	_, binding, err := c.Start(g.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if _, _, err := c.Start(f.ID, "alice"); !errors.Is(err, ErrFlowExpired) {
		t.Fatalf("start after expiry: %v", err)
	}
	if _, err := c.Complete("st-2", []string{binding}, "code", ""); !errors.Is(err, ErrFlowExpired) {
		t.Fatalf("complete after expiry: %v", err)
	}
	h, err := c.Open("notion", "bob", "https://as.example/authorize?state=st-3")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := c.Open("notion", "bob", "https://as.example/authorize?state=st-4"); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	n := len(c.byID) + len(c.byState)
	c.mu.Unlock()
	if n != 2 || h == nil {
		t.Errorf("%d entries after a sweep, want the one open flow's 2", n)
	}
}

// TestConsentFlowOpen: a flow needs a state to bind; a flow of
// switchboard's own token (no principal) starts in any browser, once.
func TestConsentFlowOpen(t *testing.T) {
	c := NewConsents(0)
	f, err := c.Open("notion", "", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Start(f.ID, "alice"); err != ErrFlowPrincipal {
		t.Errorf("a caller started a flow of switchboard's own token: %v", err)
	}
	if _, _, err := c.Start(f.ID, ""); err != nil {
		t.Errorf("start of switchboard's own flow: %v", err)
	}
	if _, err := c.Open("notion", "alice", "https://as.example/authorize"); err == nil {
		t.Error("a flow opened without a state")
	}
}

// TestConsentFetcher: what the in-band fetcher does with a flow (Client.fetch:
// Open, then Wait): the code its redirect brings reaches the waiter; a
// flow that expires first fails the wait and is forgotten.
func TestConsentFetcher(t *testing.T) {
	c := NewConsents(time.Minute)
	type res struct {
		r   *auth.AuthorizationResult
		err error
	}
	out := make(chan res, 1)
	f, err := c.Open("notion", "alice", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		r, err := c.Wait(context.Background(), f)
		out <- res{r, err}
	}()
	if f.Server != "notion" || f.Principal != "alice" {
		t.Fatalf("flow %+v", f)
	}
	_, binding, err := c.Start(f.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete("st-4d1e", []string{binding}, "code-9", ""); err != nil {
		t.Fatal(err)
	}
	if o := <-out; o.err != nil || o.r.Code != "code-9" {
		t.Fatalf("fetch: %+v %v", o.r, o.err)
	}

	short := NewConsents(50 * time.Millisecond)
	g, err := short.Open("notion", "alice", testAuthURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = short.Wait(context.Background(), g); !errors.Is(err, ErrFlowExpired) {
		t.Fatalf("a flow nobody completed: %v", err)
	}
	if _, _, err := short.Start(g.ID, "alice"); !errors.Is(err, ErrFlowUnknown) {
		t.Errorf("an expired flow is still kept: %v", err)
	}
}
