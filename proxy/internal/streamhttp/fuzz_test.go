package streamhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzPOST: whatever a client POSTs, the handler answers with one of the
// statuses the transport uses and the session goes on serving.
func FuzzPOST(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`[]`, `{}`, `[[[[`, `"str"`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	} {
		for _, v := range []string{"", "2025-03-26", "2025-11-25", "2026-07-28"} {
			f.Add(seed, v)
		}
	}
	fx := newTestServer()
	h := New(func(*http.Request) *mcp.Server { return fx.srv }, fx.directHandler, nil)
	ts := httptest.NewServer(h)
	f.Cleanup(ts.Close)
	var id string
	f.Fuzz(func(t *testing.T, body, version string) {
		if id == "" {
			id = initialize(t, ts.URL)
		}
		// A call may wait on the client (roots) for good: the POST ends
		// with its request's context all the same.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(sessionIDHeader, id)
		if version != "" {
			req.Header.Set(protocolVersionHeader, version)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		got := events(t, post(t, ts.URL, id, `{"jsonrpc":"2.0","id":"after","method":"ping"}`, map[string]string{protocolVersionHeader: "2025-11-25"}))
		if len(got) != 1 || !strings.Contains(got[0], `"id":"after"`) {
			t.Fatalf("after %q the session answered a ping with %q", body, got)
		}
	})
}
