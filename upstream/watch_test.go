package upstream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// updates records the notifications/resources/updated a Handle hands on.
type updates struct {
	mu   sync.Mutex
	uris []string
	got  chan struct{}
}

func (u *updates) Notify(_ *upstream.Handle, method string, params json.RawMessage) {
	if method != "notifications/resources/updated" {
		return
	}
	var p mcp.ResourceUpdatedNotificationParams
	_ = json.Unmarshal(params, &p)
	u.mu.Lock()
	u.uris = append(u.uris, p.URI)
	u.mu.Unlock()
	select {
	case u.got <- struct{}{}:
	default:
	}
}

func (u *updates) Request(context.Context, *upstream.Handle, string, json.RawMessage) (json.RawMessage, error) {
	return nil, nil
}

// TestSubscribeModernServer: a subscription to a resource of a 2026-07-28
// server opens subscriptions/listen for it, acknowledged before Subscribe
// returns; the server's updates reach the Peer; after Unsubscribe the
// listen is closed and no update comes. A URI the server refuses is an
// error of Subscribe.
func TestSubscribeModernServer(t *testing.T) {
	const uri = "test://watched"
	srv := mcp.NewServer(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if req.Params.URI != uri {
				return mcp.ResourceNotFoundError(req.Params.URI)
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddResource(&mcp.Resource{URI: uri, Name: "watched"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x"}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)

	u := &updates{got: make(chan struct{}, 1)}
	spec := upstream.Spec{Name: "modern", Transport: upstream.TransportHTTP, URL: ts.URL, ConnectTimeout: time.Minute, CallTimeout: 10 * time.Second}
	h := startHandle(t, spec, upstream.Options{Peer: u})
	<-h.FirstAttempt()
	if st := h.Status(); st.State != upstream.StateReady || st.Protocol != upstream.Modern {
		t.Fatalf("state %s, protocol %q (%s): want ready on %s", st.State, st.Protocol, st.LastError, upstream.Modern)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Subscribe(ctx, uri); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-u.got:
	case <-ctx.Done():
		t.Fatal("the update did not reach the peer")
	}
	u.mu.Lock()
	got := append([]string(nil), u.uris...)
	u.mu.Unlock()
	if len(got) != 1 || got[0] != uri {
		t.Fatalf("updates %v, want [%s]", got, uri)
	}

	if err := h.Unsubscribe(ctx, uri); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	// The listen's end unsubscribes it on the server: updates stop.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		select {
		case <-u.got:
			if time.Now().After(deadline) {
				t.Fatal("updates still arrive after the unsubscribe")
			}
			time.Sleep(100 * time.Millisecond)
			continue
		case <-time.After(500 * time.Millisecond):
		}
		break
	}

	if err := h.Subscribe(ctx, "test://nowhere"); err == nil {
		t.Fatal("a subscription the server refuses succeeded")
	}
}
