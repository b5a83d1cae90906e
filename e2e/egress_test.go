package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// egressSecret is the credential the config's headers resolve to, from
// the environment: what must never reach another origin.
const egressSecret = "e2e-egress-s3cret"

// headerLog records the Authorization and X-Api-Key of every request a
// server receives.
type headerLog struct {
	next http.Handler
	mu   sync.Mutex
	reqs []string
}

func (l *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.reqs = append(l.reqs, fmt.Sprintf("%s %s auth=%q key=%q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")))
	l.mu.Unlock()
	if l.next != nil {
		l.next.ServeHTTP(w, r)
	}
}

func (l *headerLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

// TestRedirectDoesNotCarrySecret: a remote server that redirects to
// another origin does not get switchboard to send that origin its
// configured credentials ("Security, round three", item 1). By default the
// redirect is refused and the collector receives nothing; with
// followRedirects "any" the other origin serves the calls but sees none of
// the configured headers.
func TestRedirectDoesNotCarrySecret(t *testing.T) {
	collector := &headerLog{}
	cs := httptest.NewServer(collector)
	t.Cleanup(cs.Close)
	redirect := func(target string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		}))
		t.Cleanup(s.Close)
		return s
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "moved", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	target := &headerLog{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	ts := httptest.NewServer(target)
	t.Cleanup(ts.Close)

	headers := map[string]any{"Authorization": "Bearer ${EGRESS_TOKEN}", "X-Api-Key": "${EGRESS_TOKEN}"}
	cfg := map[string]any{"mcpServers": map[string]any{
		"leaky": map[string]any{"url": redirect(cs.URL).URL + "/mcp", "headers": headers, "restartOnCrash": false},
		"moved": map[string]any{"url": redirect(ts.URL).URL + "/mcp", "headers": headers, "followRedirects": "any"},
	}, "requireReady": []string{"moved"}}
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, cfg, []string{"EGRESS_TOKEN=" + egressSecret})

	var st map[string]any
	testutil.Eventually(t, 30*time.Second, "leaky refused", func() bool {
		st = s.serverStatus(t, "leaky")
		e, _ := st["lastError"].(string)
		return strings.Contains(e, "egress refused")
	})
	if e := st["lastError"].(string); !strings.Contains(e, "redirect to another origin "+cs.URL) || strings.Contains(e, egressSecret) {
		t.Errorf("leaky: last error %q, want the collector's origin named and no secret", e)
	}
	if got := collector.all(); len(got) != 0 {
		t.Errorf("the collector received %d requests: %v", len(got), got)
	}

	testutil.Eventually(t, 30*time.Second, "moved ready", func() bool { return s.serverStatus(t, "moved")["state"] == "ready" })
	cs2 := s.client(t, nil)
	if got := textOf(mustCall(t, cs2, "mcp_moved_hello", map[string]any{})); !strings.Contains(got, "\nhi\n") {
		t.Fatalf("call through the redirect: %q", got)
	}
	reqs := target.all()
	if len(reqs) == 0 {
		t.Fatal("the redirect's target received nothing")
	}
	for _, r := range reqs {
		if strings.Contains(r, egressSecret) {
			t.Errorf("the other origin received the secret: %s", r)
		}
	}
	if strings.Contains(s.proc.Stderr(), egressSecret) {
		t.Error("the secret is in switchboard's log")
	}
}

// TestSSEEndpointOnAnotherOriginNotPosted: the real binary with a legacy
// SSE server whose endpoint event names another origin: switchboard posts
// nothing there, so the configured credentials never reach it, and the
// server's status says why ("Security, round three", item 1; the unit
// test upstream/TestSSEEndpointOnAnotherOriginRefused pins the refusal).
func TestSSEEndpointOnAnotherOriginNotPosted(t *testing.T) {
	collector := &headerLog{}
	cs := httptest.NewServer(collector)
	t.Cleanup(cs.Close)
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionid=1\n\n", cs.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(sse.Close)
	headers := map[string]any{"Authorization": "Bearer ${EGRESS_TOKEN}", "X-Api-Key": "${EGRESS_TOKEN}"}
	cfg := map[string]any{"mcpServers": map[string]any{
		"legacy": map[string]any{"type": "sse", "url": sse.URL + "/sse", "headers": headers, "restartOnCrash": false},
	}}
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, cfg, []string{"EGRESS_TOKEN=" + egressSecret})
	var st map[string]any
	testutil.Eventually(t, 30*time.Second, "legacy refused", func() bool {
		st = s.serverStatus(t, "legacy")
		e, _ := st["lastError"].(string)
		return strings.Contains(e, "egress refused")
	})
	if e := st["lastError"].(string); !strings.Contains(e, "SSE endpoint event names "+cs.URL) || strings.Contains(e, egressSecret) {
		t.Errorf("legacy: last error %q, want the other origin named and no secret", e)
	}
	if got := collector.all(); len(got) != 0 {
		t.Errorf("the other origin received %d requests: %v", len(got), got)
	}
	if strings.Contains(s.proc.Stderr(), egressSecret) {
		t.Error("the secret is in switchboard's log")
	}
}
