package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacySubscribeModernUpstream: a 2025-11-25 client subscribes to a
// resource of a 2026-07-28 upstream (the conformance fixture, stateless,
// its era found by the probe): switchboard listens for it upstream, the
// update the fixture sends after a subscription reaches the client, and
// a resource the upstream does not have is refused.
func TestLegacySubscribeModernUpstream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready := filepath.Join(dir, "url")
	p := start(t, dir, nil, conffix, "--transport", "http", "--listen", "127.0.0.1:0", "--ready-file", ready, "--stateless")
	url := strings.TrimSpace(waitFile(t, ready, 20*time.Second, p))
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"conformance": map[string]any{"type": "http", "url": url, "namespace": false}}})
	waitTools(t, s, "test_simple_text")
	if p := s.serverStatus(t, "conformance")["protocol"]; p != "2026-07-28" {
		t.Fatalf("the upstream speaks %v, want 2026-07-28", p)
	}
	updated := make(chan string, 4)
	cs := s.client(t, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const uri = "test://watched-resource"
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Fatalf("update for %q, want %q", got, uri)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated reached the client")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://nowhere"}); err == nil {
		t.Fatal("a subscription to a resource the upstream does not have succeeded")
	}
}
