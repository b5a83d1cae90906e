package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// firstCalls is how many calls TestCallsBeforeAnyList sends at once.
const firstCalls = 100

// TestCallsBeforeAnyList: a client that calls tools by name right after
// connecting, without listing first (as a restarted replica's clients do),
// gets every call answered, while the server is still on its first start
// and when it is lazy and not started at all, over HTTP and over stdio.
func TestCallsBeforeAnyList(t *testing.T) {
	for _, down := range []string{"http", "stdio"} {
		for _, kind := range []string{"eager", "lazy"} {
			t.Run(down+"/"+kind, func(t *testing.T) {
				t.Parallel()
				fx := fixtureServer("fx", "--slow-start", "1s")
				if kind == "lazy" {
					fx["lazy"] = true
				}
				cfg := map[string]any{"mcpServers": map[string]any{"fx": fx}}
				var cs *mcp.ClientSession
				if down == "http" {
					cs = startSwitchboard(t, cfg).client(t, nil)
				} else {
					cs = stdioClient(t, writeConfig(t, t.TempDir(), cfg))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				var (
					wg     sync.WaitGroup
					mu     sync.Mutex
					failed []string
				)
				sem := make(chan struct{}, 20)
				for i := range firstCalls {
					wg.Go(func() {
						sem <- struct{}{}
						defer func() { <-sem }()
						want := fmt.Sprintf("call %d", i)
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_fx_echo", Arguments: map[string]any{"text": want}})
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err != nil:
							failed = append(failed, err.Error())
						case res.IsError || !strings.Contains(textOf(res), want):
							failed = append(failed, "result "+textOf(res))
						}
					})
				}
				wg.Wait()
				if len(failed) > 0 {
					t.Errorf("%d of %d calls before any list failed, e.g. %s", len(failed), firstCalls, failed[0])
				}
			})
		}
	}
}

// stdioClient runs switchboard serve --stdio with config and connects to
// it; it is stopped when the test ends.
func stdioClient(t *testing.T, config string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cmd := newCmd(switchboard, "serve", "--stdio", "--config", config)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
