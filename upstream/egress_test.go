package upstream_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/internal/testutil"
)

// The configured headers of the egress tests: what must never reach
// another origin. See "Security, round three", item 1.
const (
	egressToken  = "Bearer egress-s3cret-token"
	egressAPIKey = "egress-api-key-value"
)

var egressHeaders = map[string]string{"Authorization": egressToken, "X-Api-Key": egressAPIKey}

// seen is one request a recorder received.
type seen struct {
	method string
	header http.Header
	body   string
}

// recorder logs every request it receives, then hands it to next (if set,
// else answers 200 with nothing).
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, seen{r.Method, r.Header.Clone(), string(body)})
	rc.mu.Unlock()
	if rc.next == nil {
		return
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	rc.next.ServeHTTP(w, r)
}

func (rc *recorder) requests() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

// leaked reports the configured header values one of reqs carried.
func leaked(reqs []seen) []string {
	var out []string
	for _, r := range reqs {
		for _, v := range []string{r.header.Get("Authorization"), r.header.Get("X-Api-Key")} {
			if v != "" {
				out = append(out, fmt.Sprintf("%s %s", r.method, v))
			}
		}
	}
	return out
}

// helloServer is an MCP server over streamable HTTP with one tool, hello.
func helloServer() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hello", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// redirectTo answers every request with status and a Location on target
// (another origin), keeping path and query.
func redirectTo(target string, status int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.RequestURI(), status)
	})
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// egressSpec is a remote server at url with the configured headers, that
// fails at once instead of retrying, and speaks 2025-11-25 (no probe).
func egressSpec(transport, url string) upstream.Spec {
	return upstream.Spec{Name: "remote", Transport: transport, URL: url, Headers: egressHeaders,
		Protocol: "2025-11-25", ConnectTimeout: 20 * time.Second, CallTimeout: 10 * time.Second}
}

// firstAttempt starts a Handle for spec and returns its status once the
// first start attempt is over.
func firstAttempt(t *testing.T, spec upstream.Spec) (*upstream.Handle, upstream.Status) {
	t.Helper()
	h := startHandle(t, spec, upstream.Options{})
	select {
	case <-h.FirstAttempt():
	case <-time.After(30 * time.Second):
		t.Fatal("no first start attempt within 30s")
	}
	return h, h.Status()
}

// wantRefused checks that the start failed with an egress error that names
// the server and what, and holds no configured header value.
func wantRefused(t *testing.T, st upstream.Status, what ...string) {
	t.Helper()
	if st.State == upstream.StateReady {
		t.Fatalf("state %s, want the start refused", st.State)
	}
	for _, w := range append([]string{`upstream "remote"`, "egress refused"}, what...) {
		if !strings.Contains(st.LastError, w) {
			t.Errorf("last error lacks %q: %s", w, st.LastError)
		}
	}
	if strings.Contains(st.LastError, "s3cret") || strings.Contains(st.LastError, egressAPIKey) {
		t.Errorf("last error holds a configured header value: %s", st.LastError)
	}
}

// TestRedirectToAnotherOriginRefused: by default a redirect to another
// origin is not followed, whatever its status: the other origin receives
// no request at all, so neither the credentials nor the body.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			collector := &recorder{}
			cs := newServer(t, collector)
			front := newServer(t, redirectTo(cs.URL, status))
			_, st := firstAttempt(t, egressSpec(upstream.TransportHTTP, front.URL+"/mcp"))
			wantRefused(t, st, "redirect to another origin "+cs.URL, `followRedirects is "same-origin"`)
			if got := collector.requests(); len(got) != 0 {
				t.Errorf("the collector received %d requests (headers leaked: %v)", len(got), leaked(got))
			}
		})
	}
}

// TestRedirectToAnotherOriginWithoutHeaders: with followRedirects "any" the
// other origin serves the session, every request of it (POSTs, the
// standalone GET, DELETE) arriving without the configured headers, which
// still go to the configured origin.
func TestRedirectToAnotherOriginWithoutHeaders(t *testing.T) {
	other := &recorder{next: helloServer()}
	ts := newServer(t, other)
	front := &recorder{next: redirectTo(ts.URL, http.StatusTemporaryRedirect)}
	fs := newServer(t, front)
	spec := egressSpec(upstream.TransportHTTP, fs.URL+"/mcp")
	spec.FollowRedirects = upstream.RedirectAny
	h, st := firstAttempt(t, spec)
	if st.State != upstream.StateReady {
		t.Fatalf("state %s (%s), want ready", st.State, st.LastError)
	}
	if got := callText(t, h, "hello"); got != "hi" {
		t.Fatalf("call: %q", got)
	}
	testutil.Eventually(t, 10*time.Second, "the standalone stream", func() bool { return hasMethod(other.requests(), http.MethodGet) })
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the session's DELETE", func() bool { return hasMethod(other.requests(), http.MethodDelete) })
	if l := leaked(other.requests()); len(l) != 0 {
		t.Errorf("the other origin received configured headers: %v", l)
	}
	for _, r := range front.requests() {
		if r.header.Get("Authorization") != egressToken || r.header.Get("X-Api-Key") != egressAPIKey {
			t.Errorf("%s to the configured origin without its headers", r.method)
		}
	}
}

func hasMethod(reqs []seen, m string) bool {
	for _, r := range reqs {
		if r.method == m {
			return true
		}
	}
	return false
}

// TestSameOriginRedirectKeepsHeaders: a redirect within the configured
// origin is followed by default, with the configured headers.
func TestSameOriginRedirectKeepsHeaders(t *testing.T) {
	mux := http.NewServeMux()
	served := &recorder{next: helloServer()}
	mux.Handle("/mcp", served)
	mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusPermanentRedirect))
	s := newServer(t, mux)
	h, st := firstAttempt(t, egressSpec(upstream.TransportHTTP, s.URL+"/old"))
	if st.State != upstream.StateReady {
		t.Fatalf("state %s (%s), want ready", st.State, st.LastError)
	}
	if got := callText(t, h, "hello"); got != "hi" {
		t.Fatalf("call: %q", got)
	}
	reqs := served.requests()
	if len(reqs) == 0 {
		t.Fatal("nothing reached the redirect's target")
	}
	for _, r := range reqs {
		if r.header.Get("Authorization") != egressToken || r.header.Get("X-Api-Key") != egressAPIKey {
			t.Errorf("%s after a same-origin redirect without the configured headers", r.method)
		}
	}

	// followRedirects "none" refuses even this one.
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	spec := egressSpec(upstream.TransportHTTP, s.URL+"/old")
	spec.FollowRedirects = upstream.RedirectNone
	before := len(served.requests())
	_, st = firstAttempt(t, spec)
	wantRefused(t, st, `followRedirects is "none"`)
	if n := len(served.requests()) - before; n != 0 {
		t.Errorf("%d requests followed a redirect with followRedirects none", n)
	}
}

// TestSSEEndpointOnAnotherOriginRefused: a legacy SSE server whose endpoint
// event names another origin does not get switchboard to post there: the
// connect fails saying why, and the other origin receives nothing.
func TestSSEEndpointOnAnotherOriginRefused(t *testing.T) {
	collector := &recorder{}
	cs := newServer(t, collector)
	sse := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionid=1\n\n", cs.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	_, st := firstAttempt(t, egressSpec(upstream.TransportSSE, sse.URL+"/sse"))
	wantRefused(t, st, "SSE endpoint event names "+cs.URL, "another origin than the server's "+sse.URL)
	if got := collector.requests(); len(got) != 0 {
		t.Errorf("the other origin received %d requests (headers leaked: %v)", len(got), leaked(got))
	}
}

// TestEgressAllowList: with an allow-list, no request goes to an origin
// not on it: neither the configured URL's nor a redirect's, even with
// followRedirects "any".
func TestEgressAllowList(t *testing.T) {
	t.Run("configured url", func(t *testing.T) {
		served := &recorder{next: helloServer()}
		s := newServer(t, served)
		spec := egressSpec(upstream.TransportHTTP, s.URL+"/mcp")
		spec.EgressAllow = []upstream.OriginPattern{{Scheme: "https", Host: "*.example.com"}, {Scheme: "http", Host: "localhost", Port: "*"}}
		_, st := firstAttempt(t, spec)
		wantRefused(t, st, s.URL+" is not on the egress allow-list")
		if got := served.requests(); len(got) != 0 {
			t.Errorf("the server off the allow-list received %d requests", len(got))
		}
	})
	t.Run("redirect", func(t *testing.T) {
		collector := &recorder{}
		cs := newServer(t, collector)
		front := newServer(t, redirectTo(cs.URL, http.StatusTemporaryRedirect))
		spec := egressSpec(upstream.TransportHTTP, front.URL+"/mcp")
		spec.FollowRedirects = upstream.RedirectAny
		u, _ := url.Parse(front.URL)
		spec.EgressAllow = []upstream.OriginPattern{{Scheme: "http", Host: u.Hostname(), Port: u.Port()}}
		_, st := firstAttempt(t, spec)
		wantRefused(t, st, cs.URL+" is not on the egress allow-list")
		if got := collector.requests(); len(got) != 0 {
			t.Errorf("the origin off the allow-list received %d requests", len(got))
		}
	})
	t.Run("allowed", func(t *testing.T) {
		s := newServer(t, helloServer())
		spec := egressSpec(upstream.TransportHTTP, s.URL+"/mcp")
		spec.EgressAllow = []upstream.OriginPattern{{Scheme: "https", Host: "*.example.com"}, {Scheme: "http", Host: "127.0.0.1", Port: "*"}}
		h, st := firstAttempt(t, spec)
		if st.State != upstream.StateReady {
			t.Fatalf("state %s (%s), want ready", st.State, st.LastError)
		}
		if got := callText(t, h, "hello"); got != "hi" {
			t.Fatalf("call: %q", got)
		}
	})
}
