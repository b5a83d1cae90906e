package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestSessionIsolationProgressAndLogs: two sessions on /mcp call chatter on
// one shared upstream at the same time, many times. Neither ever receives,
// on any of its streams (each call's POST stream and the standalone GET
// stream), a progress notification for the other's token or a log message
// the other's calls produced.
//
// A log message from a stdio upstream carries no request id: while both
// sessions have calls in flight, a proxy cannot tell whose it is and must
// give it to neither. So the test does not ask that each session gets all
// of its own log messages, only that it gets none of the other's. The
// sessions ask for different numbers of log messages, which tells them
// apart ("log i of 50" is A's, "log i of 51" B's).
func TestSessionIsolationProgressAndLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{"c": fixtureServer("c")}})
	const calls = 50
	type session struct {
		name string
		logs int // per call, telling this session's log messages apart
		c    *rawHTTP

		mu                   sync.Mutex
		ownProgress, ownLogs int
		onGET                int // of those, on the GET stream
		leaks                []string
	}
	sessions := []*session{{name: "A", logs: 50}, {name: "B", logs: 51}}
	const getStream = "the GET stream"
	// see records a message that reached sess on stream.
	see := func(sess *session, stream string, m rpcMsg) {
		sess.mu.Lock()
		defer sess.mu.Unlock()
		get := 0
		if stream == getStream {
			get = 1
		}
		if p, ok := progressOf(m); ok {
			if tok, _ := p.Token.(string); strings.HasPrefix(tok, sess.name+"-") {
				sess.ownProgress++
				sess.onGET += get
			} else {
				sess.leaks = append(sess.leaks, fmt.Sprintf("progress for token %v on %s", p.Token, stream))
			}
		}
		if i, n, ok := chatterLog(m); ok {
			if n == sess.logs {
				sess.ownLogs++
				sess.onGET += get
			} else {
				sess.leaks = append(sess.leaks, fmt.Sprintf("log message %q on %s", fmt.Sprintf("log %d of %d", i, n), stream))
			}
		}
	}
	for _, sess := range sessions {
		sess.c = newRawHTTP(t, "http://"+s.addr+"/mcp", "")
		sess.c.open(t, ctx, "mcp_c_chatter")
		sess.c.listen(t, ctx, func(m rpcMsg) { see(sess, getStream, m) })
	}
	var wg sync.WaitGroup
	for _, sess := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range calls {
				tok := fmt.Sprintf("%s-%d", sess.name, k)
				before, res, err := sess.c.call(ctx, "tools/call", chatterCall("mcp_c_chatter", tok, chatterSteps, sess.logs))
				if err == nil {
					err = res.failure()
				}
				if err != nil {
					t.Errorf("session %s, call %s: %v", sess.name, tok, err)
					return
				}
				for _, m := range before {
					see(sess, "the POST stream of "+tok, m)
				}
			}
		}()
	}
	wg.Wait()
	for _, sess := range sessions {
		sess.mu.Lock()
		t.Logf("session %s: %d of its %d progress notifications and %d of its %d log messages, %d of them on the GET stream",
			sess.name, sess.ownProgress, calls*chatterSteps, sess.ownLogs, calls*sess.logs, sess.onGET)
		if len(sess.leaks) > 0 {
			t.Errorf("session %s received %d notifications of the other session; the first: %s", sess.name, len(sess.leaks), strings.Join(sess.leaks[:min(5, len(sess.leaks))], "; "))
		}
		if sess.ownProgress == 0 {
			t.Errorf("session %s received none of its own progress notifications", sess.name)
		}
		sess.mu.Unlock()
	}
}

// TestSharedUpstreamNeverSeesClientRoots: a shared upstream serves many
// clients, so it must never get one client's roots; it gets the roots the
// operator configures (none here: the roots capability is not even
// advertised), and the fixture's roots tool learns none. A per-client
// upstream gets its own client's roots.
func TestSharedUpstreamNeverSeesClientRoots(t *testing.T) {
	const secret = "file:///secret-client-root"
	s := startSwitchboard(t, map[string]any{"mcpServers": map[string]any{
		"sh": fixtureServer("sh"),
		"pc": map[string]any{"command": fixture, "args": []string{"--name", "pc"}, "isolation": "per-client"},
	}})
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol="+version, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil) // advertises roots
			c.AddRoots(&mcp.Root{URI: secret, Name: "secret"})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			testutil.Eventually(t, 20*time.Second, "both servers listed", func() bool {
				tools := listTools(t, cs)
				return tools["mcp_sh_roots"] != nil && tools["mcp_pc_roots"] != nil
			})

			res := mustCall(t, cs, "mcp_sh_roots", map[string]any{})
			got := textOf(res)
			switch {
			case strings.Contains(js(res), "secret-client-root"):
				t.Errorf("the shared upstream got the client's roots: %s", js(res))
			case res.IsError && !strings.Contains(got, "roots"),
				!res.IsError && unwrap(got) != "":
				// Guards against a pass for an unrelated failure.
				t.Errorf("the shared upstream's roots tool: want no roots or a roots error, got %s", js(res))
			default:
				t.Logf("the shared upstream's roots tool: %s", js(res))
			}

			res = mustCall(t, cs, "mcp_pc_roots", map[string]any{})
			if res.IsError || !strings.Contains(textOf(res), secret) {
				t.Errorf("the per-client upstream did not get its client's roots: %s", js(res))
			}
		})
	}
}

// TestSSESessionBoundToToken: a session opened with one token cannot be
// used with another, on /sse (the session's POST URL) as on /mcp (its
// Mcp-Session-Id).
func TestSSESessionBoundToToken(t *testing.T) {
	const tokA, tokB = "token-a-0123456789abcdef", "token-b-fedcba9876543210"
	dir := t.TempDir()
	s := startSwitchboardIn(t, dir, dir, map[string]any{
		"mcpServers": map[string]any{"a": fixtureServer("a")},
		"auth":       map[string]any{"tokens": []string{"secret://env/TOK_A", "secret://env/TOK_B"}},
	}, []string{"TOK_A=" + tokA, "TOK_B=" + tokB})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &http.Client{}

	t.Run("sse", func(t *testing.T) {
		st, post := dialSSE(t, ctx, "http://"+s.addr+"/sse", tokA)
		st.mustCall(t, ctx, "initialize", initializeParams())
		if err := st.send(ctx, notification("notifications/initialized", nil)); err != nil {
			t.Fatal(err)
		}
		status, err := postStatus(ctx, hc, post, tokB, request(1000, "ping", nil))
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("ping with token B on token A's SSE session: status %d, want 403 or 404", status)
		}
		status, err = postStatus(ctx, hc, post, tokA, request(1001, "ping", nil))
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusAccepted {
			t.Fatalf("ping with token A on its own SSE session: status %d, want 202", status)
		}
		// The answer to token A's ping comes on the stream; none came for B's.
		res, err := st.await(ctx, 1001, func(m rpcMsg) {
			if m.answers(1000) {
				t.Errorf("token B's ping was answered on token A's stream: %s", js(m))
			}
		})
		if err != nil {
			t.Fatalf("no answer to token A's ping: %v", err)
		}
		if err := res.failure(); err != nil {
			t.Errorf("token A's ping: %v", err)
		}
	})

	t.Run("mcp", func(t *testing.T) {
		a := newRawHTTP(t, "http://"+s.addr+"/mcp", tokA)
		a.open(t, ctx, "mcp_a_echo")
		b := newRawHTTP(t, a.url, tokB)
		b.sid = a.sid
		resp, err := b.hc.Do(b.newPost(ctx, request(1000, "ping", nil)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("ping with token B on token A's session: status %d, want 404 (as an unknown session)", resp.StatusCode)
		}
		a.mustCall(t, ctx, "ping", nil)
	})
}
