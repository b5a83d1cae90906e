package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/internal/testutil"
)

// legacyOnly is a streamable HTTP server of the 2025-11-25 era that refuses
// what it does not know before initialize as the servers people run do:
// the TypeScript SDK answers 400 with an error whose id is null; others
// answer 404 or 405 without JSON-RPC, or "method not found" for the id.
type legacyOnly struct {
	next     http.Handler
	status   int
	body     string
	probes   atomic.Int32
	contentT string
}

func (l *legacyOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "server/discover" {
			l.probes.Add(1)
			w.Header().Set("Content-Type", l.contentT)
			w.WriteHeader(l.status)
			_, _ = io.WriteString(w, l.body)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	l.next.ServeHTTP(w, r)
}

// TestProbeAnsweredByLegacyServer: any answer to server/discover that is not
// a 2026-07-28 result means "legacy, initialize now" — at once, without a
// warning, and the era is kept for the next connect.
func TestProbeAnsweredByLegacyServer(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
	}{
		{"typescript sdk null id", "application/json",
			`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`, http.StatusBadRequest},
		{"method not found for its id", "application/json",
			`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}`, http.StatusBadRequest},
		{"another id", "application/json",
			`{"jsonrpc":"2.0","error":{"code":-32600,"message":"bad"},"id":"x"}`, http.StatusBadRequest},
		{"json that is not json-rpc", "application/json", `{"error":"not here"}`, http.StatusNotFound},
		{"plain 405", "text/plain", "Method Not Allowed", http.StatusMethodNotAllowed},
		{"html 404", "text/html", "<h1>not found</h1>", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
			srv.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
				})
			lo := &legacyOnly{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil),
				status: tc.status, body: tc.body, contentT: tc.contentType}
			ts := httptest.NewServer(lo)
			t.Cleanup(ts.Close)

			log, buf := testLogger(t)
			spec := upstream.Spec{Name: "legacy", Transport: upstream.TransportHTTP, URL: ts.URL,
				ConnectTimeout: time.Minute, CallTimeout: 10 * time.Second, RestartOnCrash: true, MaxRestarts: 5}
			h := startHandle(t, spec, upstream.Options{Logger: log})
			select {
			case <-h.FirstAttempt():
			case <-time.After(time.Minute):
				t.Fatal("no first start attempt within a minute")
			}
			if st := h.Status(); st.State != upstream.StateReady {
				t.Fatalf("state %s (%s), want ready", st.State, st.LastError)
			}
			if got := callText(t, h, "hello"); got != "hi" {
				t.Fatalf("call: %q", got)
			}
			if lines := buf.String(); strings.Contains(lines, "[WARN]") || strings.Contains(lines, "[ERROR]") {
				t.Errorf("the probe's refusal was logged as a fault:\n%s", lines)
			}
			if n := lo.probes.Load(); n != 1 {
				t.Errorf("%d probes, want 1", n)
			}
			// A restart keeps the era found: no second probe.
			if !h.Restart() {
				t.Fatal("restart refused")
			}
			testutil.Eventually(t, time.Minute, "ready after the restart", func() bool {
				return h.Status().State == upstream.StateReady && strings.Count(buf.String(), "upstream ready") == 2
			})
			if n := lo.probes.Load(); n != 1 {
				t.Errorf("%d probes after a restart, want 1", n)
			}
		})
	}
}

// TestSeededEraSkipsProbe: a Handle seeded with the catalog and protocol of
// an earlier run does not probe a server found to be of the legacy era;
// its tools are listed before the start, and the server's own listing
// replaces the seed.
func TestSeededEraSkipsProbe(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	lo := &legacyOnly{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil),
		status: http.StatusBadRequest, contentT: "application/json",
		body: `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`}
	ts := httptest.NewServer(lo)
	t.Cleanup(ts.Close)
	log, _ := testLogger(t)
	spec := upstream.Spec{Name: "legacy", Transport: upstream.TransportHTTP, URL: ts.URL,
		ConnectTimeout: time.Minute, CallTimeout: 10 * time.Second}
	h := upstream.New(spec, upstream.Options{Logger: log})
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	seed := &upstream.Catalog{Tools: []*mcp.Tool{{Name: "hello", InputSchema: map[string]any{"type": "object"}}}}
	h.Seed(seed, "2025-11-25")
	if h.Catalog() != seed || h.Listed() || !h.Status().CatalogCached {
		t.Fatal("the seed is not the catalog before the start")
	}
	h.Start()
	<-h.FirstAttempt()
	if st := h.Status(); st.State != upstream.StateReady || st.CatalogCached || !h.Listed() {
		t.Fatalf("after the start: %+v, listed %v", st, h.Listed())
	}
	if n := lo.probes.Load(); n != 0 {
		t.Errorf("%d probes of a server seeded as legacy, want 0", n)
	}
}
