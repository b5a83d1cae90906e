package e2e

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestProgressReachesOnlyTheCaller: two sessions call a progress tool at
// once; each sees exactly its own notifications, with its own token.
func TestProgressReachesOnlyTheCaller(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"p": fixtureServer("p")}})
	type got struct {
		mu     sync.Mutex
		tokens []any
	}
	var a, b got
	mk := func(g *got) *mcp.ClientSession {
		return connectHTTP(t, "http://"+s.addr+"/mcp", &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				g.mu.Lock()
				g.tokens = append(g.tokens, r.Params.ProgressToken)
				g.mu.Unlock()
			},
		})
	}
	ca, cb := mk(&a), mk(&b)
	testutil.Eventually(t, 20*time.Second, "listed", func() bool { return listTools(t, ca)["mcp_p_progress"] != nil })
	var wg sync.WaitGroup
	for i, cs := range []*mcp.ClientSession{ca, cb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &mcp.CallToolParams{Name: "mcp_p_progress", Arguments: map[string]any{"steps": 5, "delay_ms": 20}}
			p.SetProgressToken([]string{"token-a", "token-b"}[i])
			if _, err := cs.CallTool(context.Background(), p); err != nil {
				t.Errorf("progress call: %v", err)
			}
		}()
	}
	wg.Wait()
	for name, c := range map[string]struct {
		g    *got
		want string
	}{"a": {&a, "token-a"}, "b": {&b, "token-b"}} {
		testutil.Eventually(t, 5*time.Second, name+" progress", func() bool {
			c.g.mu.Lock()
			defer c.g.mu.Unlock()
			return len(c.g.tokens) >= 5
		})
		c.g.mu.Lock()
		for _, tok := range c.g.tokens {
			if tok != c.want {
				t.Errorf("session %s got progress token %v, want only %s", name, tok, c.want)
			}
		}
		if len(c.g.tokens) != 5 {
			t.Errorf("session %s got %d notifications, want 5", name, len(c.g.tokens))
		}
		c.g.mu.Unlock()
	}
}

// TestSamplingReachesTheCallingClient: an upstream's sampling request during
// a call reaches the client that made the call, and its answer returns to
// the upstream; with two calls in flight the request fails fast.
func TestSamplingReachesTheCallingClient(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"llm": fixtureServer("llm")}})
	var asked atomic.Int32
	release := make(chan struct{})
	cs := s.client(t, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked.Add(1)
			<-release
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "the model says hi"}}, nil
		},
	})
	other := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "listed", func() bool { return listTools(t, cs)["mcp_llm_sample"] != nil })

	close(release)
	res := mustCall(t, cs, "mcp_llm_sample", map[string]any{"prompt": "say hi"})
	if res.IsError || !strings.Contains(textOf(res), "the model says hi") {
		t.Fatalf("sampling round trip: %s", js(res))
	}
	if asked.Load() != 1 {
		t.Errorf("client asked %d times", asked.Load())
	}

	// Two calls in flight on the shared upstream session: the sampling
	// request cannot be routed and fails at once instead of hanging.
	hold := make(chan struct{})
	go func() {
		defer close(hold)
		_, _ = callTool(t, other, "mcp_llm_sleep", map[string]any{"ms": 3000})
	}()
	s.waitServer(t, "llm", 10*time.Second, "the sleep call in flight", func(st serverState) bool { return st.InFlight > 0 })
	start := time.Now()
	res = mustCall(t, cs, "mcp_llm_sample", map[string]any{"prompt": "again"})
	if !res.IsError || !strings.Contains(textOf(res), "calls in flight") {
		t.Errorf("ambiguous sampling: %s", js(res))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("ambiguous sampling took %s", d)
	}
	<-hold
}

// TestLoggingForwarded: a client that sets a level receives the upstream's
// log messages with the server in the logger name.
func TestLoggingForwarded(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"lg": fixtureServer("lg")}})
	msgs := make(chan *mcp.LoggingMessageParams, 16)
	cs := s.client(t, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
		select {
		case msgs <- r.Params:
		default:
		}
	}})
	testutil.Eventually(t, 20*time.Second, "listed", func() bool { return listTools(t, cs)["mcp_lg_log"] != nil })
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	mustCall(t, cs, "mcp_lg_log", map[string]any{"level": "debug", "message": "too chatty"})
	mustCall(t, cs, "mcp_lg_log", map[string]any{"level": "warning", "message": "disk almost full"})
	select {
	case m := <-msgs:
		if m.Level != "warning" || !strings.HasPrefix(m.Logger, "lg") || !strings.Contains(js(m.Data), "disk almost full") {
			t.Errorf("log message: %s", js(m))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no log message reached the client")
	}
}

// TestSubscriptionFanOut: two sessions subscribe to one resource; an update
// reaches both, and after one unsubscribes only the other.
func TestSubscriptionFanOut(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"r": fixtureServer("r")}})
	updates := [2]atomic.Int32{}
	var sessions [2]*mcp.ClientSession
	for i := range sessions {
		sessions[i] = s.client(t, &mcp.ClientOptions{ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {
			updates[i].Add(1)
		}})
	}
	testutil.Eventually(t, 20*time.Second, "listed", func() bool { return listTools(t, sessions[0])["mcp_r_touch_resource"] != nil })
	const uri = "fixture://static/hello"
	for _, cs := range sessions {
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	// One upstream subscription serves both.
	if got := unwrap(textOf(mustCall(t, sessions[0], "mcp_r_subscriptions", map[string]any{}))); !strings.Contains(got, uri+" 1") {
		t.Errorf("upstream subscriptions: %q", got)
	}
	mustCall(t, sessions[0], "mcp_r_touch_resource", map[string]any{"uri": uri})
	testutil.Eventually(t, 5*time.Second, "both updated", func() bool { return updates[0].Load() == 1 && updates[1].Load() == 1 })
	if err := sessions[1].Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	mustCall(t, sessions[0], "mcp_r_touch_resource", map[string]any{"uri": uri})
	testutil.Eventually(t, 5*time.Second, "first updated again", func() bool { return updates[0].Load() == 2 })
	// The update went to both at once before; nothing signals that the
	// unsubscribed session was spared, so this gives it 200 ms more.
	time.Sleep(200 * time.Millisecond)
	if updates[1].Load() != 1 {
		t.Errorf("unsubscribed session got %d updates", updates[1].Load())
	}
}

// TestCancellationReachesUpstream: a client cancel ends the upstream call;
// the breaker does not count it.
func TestCancellationReachesUpstream(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"c": fixtureServer("c")}})
	cs := s.client(t, nil)
	testutil.Eventually(t, 20*time.Second, "listed", func() bool { return listTools(t, cs)["mcp_c_hang"] != nil })
	for range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_c_hang", Arguments: map[string]any{}})
		cancel()
		if err == nil {
			t.Fatal("hang returned without a cancel")
		}
	}
	testutil.Eventually(t, 5*time.Second, "no calls left in flight", func() bool {
		st := s.serverStatus(t, "c")
		return st != nil && st["inFlight"] == float64(0)
	})
	if st := s.serverStatus(t, "c"); st["breaker"] != "closed" {
		t.Errorf("client cancellations tripped the breaker: %v", st["breaker"])
	}
	if res := mustCall(t, cs, "mcp_c_echo", map[string]any{"text": "fine"}); res.IsError {
		t.Errorf("server unusable after cancellations: %s", textOf(res))
	}
}

// TestPerClientIsolation: with isolation: per-client, each downstream
// session gets its own upstream process, closed with its session; a
// sampling request from it reaches its session even with calls in flight
// elsewhere.
func TestPerClientIsolation(t *testing.T) {
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"iso": map[string]any{"command": fixture, "args": []string{"--name", "iso"}, "isolation": "per-client"},
	}})
	a := s.client(t, nil)
	b := s.client(t, &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "from b's model"}}, nil
	}})
	testutil.Eventually(t, 20*time.Second, "listed", func() bool { return listTools(t, a)["mcp_iso_pid"] != nil })
	pa, pb := pidOf(t, a, "mcp_iso_pid"), pidOf(t, b, "mcp_iso_pid")
	if pa == pb {
		t.Fatalf("two sessions share upstream process %d", pa)
	}
	if again := pidOf(t, a, "mcp_iso_pid"); again != pa {
		t.Errorf("session a moved from process %d to %d", pa, again)
	}
	// a keeps a call in flight on its own instance; b's sampling still routes.
	hold := make(chan struct{})
	go func() {
		defer close(hold)
		_, _ = callTool(t, a, "mcp_iso_sleep", map[string]any{"ms": 1500})
	}()
	s.waitServer(t, "iso", 5*time.Second, "with a's call in flight", func(st serverState) bool { return st.InFlight > 0 })
	res := mustCall(t, b, "mcp_iso_sample", map[string]any{"prompt": "hi"})
	if res.IsError || !strings.Contains(textOf(res), "from b's model") {
		t.Errorf("sampling on a per-client instance: %s", js(res))
	}
	<-hold
	if err := a.Close(); err != nil {
		t.Logf("close a: %v", err)
	}
	testutil.Eventually(t, 20*time.Second, "a's process stopped with its session", func() bool { return !pidAlive(pa) })
	if !pidAlive(pb) {
		t.Error("b's process stopped with a's session")
	}
}
