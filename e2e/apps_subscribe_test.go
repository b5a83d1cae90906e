package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestMCPAppsSubscribe subscribes to a UI resource by its public URI
// (ui://<server>/…): the server is subscribed under its own URI, the
// update it sends reaches the client under the public one, and the
// unsubscribe ends the server's subscription.
func TestMCPAppsSubscribe(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"fix": map[string]any{"command": fixture, "args": []string{"--name", "fix", "--apps"}},
	}})
	updated := make(chan string, 8)
	opts := appsClientOptions()
	opts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}
	cs := s.client(t, opts)
	waitTools(t, s, "mcp_fix_show_app")
	const public, own = "ui://fix/fixture/app.html", "ui://fixture/app.html"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subscriptions := func() string {
		return unwrap(textOf(mustCall(t, cs, "mcp_fix_subscriptions", map[string]any{})))
	}

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: public}); err != nil {
		t.Fatalf("subscribe to %s: %v", public, err)
	}
	if got := subscriptions(); !strings.Contains(got, own+" 1") || strings.Contains(got, public) {
		t.Errorf("the server's subscriptions %q, want %s once and not the public URI", got, own)
	}
	mustCall(t, cs, "mcp_fix_touch_resource", map[string]any{"uri": own})
	select {
	case uri := <-updated:
		if uri != public {
			t.Errorf("the update names %q, want the public %q", uri, public)
		}
	case <-ctx.Done():
		t.Fatalf("no notifications/resources/updated for %s", public)
	}

	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: public}); err != nil {
		t.Fatalf("unsubscribe from %s: %v", public, err)
	}
	testutil.Eventually(t, 10*time.Second, "the server's subscription ended", func() bool {
		return !strings.Contains(subscriptions(), own)
	})
}
