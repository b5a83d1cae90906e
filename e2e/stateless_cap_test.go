package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestStatelessPerClientCap: 2026-07-28 requests, which open no session,
// are held to maxSessions like sessions when they need a per-client
// server: with maxSessions 3, sixteen concurrent calls never run more than
// three instances at once (counted in /proc), and a call that found no
// place in time gets a tool error naming maxSessions.
func TestStatelessPerClientCap(t *testing.T) {
	t.Parallel()
	mark := newMark(t)
	s := startSwitchboard(t, map[string]any{
		"mcpServers":  map[string]any{"pc": with(markedServer("pc", mark), "isolation", "per-client")},
		"maxSessions": 3,
	})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(ctx context.Context, method, name, params string) (string, error) {
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + meta + `}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.addr+"/mcp", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return string(data), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testutil.Eventually(t, 20*time.Second, "the per-client server's tools listed", func() bool {
		body, err := post(ctx, "tools/list", "", "")
		return err == nil && strings.Contains(body, "mcp_pc_sleep")
	})
	// The catalog's own instance, if one runs, is not a client's.
	base := len(marked(mark))

	var most atomic.Int32
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if n := int32(len(marked(mark)) - base); n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	const calls = 16
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		ok, refused   int
		unexplained   []string
		transportErrs []error
	)
	for range calls {
		wg.Go(func() {
			body, err := post(ctx, "tools/call", "mcp_pc_sleep", `"name":"mcp_pc_sleep","arguments":{"ms":1500},`)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				transportErrs = append(transportErrs, err)
			case strings.Contains(body, `"resultType":"complete"`) && !strings.Contains(body, `"isError":true`):
				ok++
			case strings.Contains(body, "maxSessions"):
				refused++
			default:
				unexplained = append(unexplained, body)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-watched
	t.Logf("%d calls: %d answered, %d refused; at most %d per-client instances at once (%d other processes)", calls, ok, refused, most.Load(), base)
	if most.Load() > 3 {
		t.Errorf("%d per-client instances ran at once, want at most 3 (maxSessions)", most.Load())
	}
	if ok == 0 {
		t.Error("no call was answered")
	}
	if len(transportErrs) > 0 || len(unexplained) > 0 {
		t.Errorf("calls neither answered nor refused naming maxSessions: %v %.500q", transportErrs, unexplained)
	}
}
