package upstream

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestStreamableStreamLostFailsCall: a request's stream that breaks or
// ends before its response fails the call at once with errStreamLost, as
// its own response, instead of leaving it to the call's timeout (#17). The
// connection itself lives on: whether the server is gone is the Handle's
// to find out.
func TestStreamableStreamLostFailsCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		abort bool // cut the TCP connection instead of ending the response
	}{
		{"connection cut", true},
		{"response ended", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakCheck(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				switch {
				case r.Method != http.MethodPost:
					w.WriteHeader(http.StatusMethodNotAllowed)
				case bytes.Contains(body, []byte(`"initialize"`)):
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`)
				case !bytes.Contains(body, []byte(`"id"`)):
					w.WriteHeader(http.StatusAccepted)
				default:
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
					w.(http.Flusher).Flush()
					if tc.abort {
						panic(http.ErrAbortHandler) // the server closes the connection mid-response
					}
				}
			}))
			t.Cleanup(srv.Close)
			c := dialStream(t, &streamServer{srv: srv}, 0)
			c.initialize()
			c.write(makeRequest(t, 2, "tools/call", map[string]any{"name": "x", "arguments": map[string]any{}}))
			if m, ok := c.read().(*jsonrpc.Request); !ok || m.Method != "notifications/progress" {
				t.Fatalf("got %v, want the call's progress first", m)
			}
			want, _ := jsonrpc.MakeID(float64(2))
			r, ok := c.read().(*jsonrpc.Response)
			if !ok || r.ID != want {
				t.Fatalf("got %v, want a response to the call", r)
			}
			var we *jsonrpc.Error
			if !errors.Is(r.Error, errStreamLost) || errors.As(r.Error, &we) {
				t.Fatalf("response error %v, want errStreamLost and no JSON-RPC error", r.Error)
			}
			if err := c.failure(); err != nil {
				t.Errorf("the connection failed: %v", err)
			}
			waitLog(t, c, "request stream lost")
		})
	}
}
