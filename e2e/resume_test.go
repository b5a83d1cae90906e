package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resumeGet is a GET with Last-Event-ID a client's transport sent, and its
// answer.
type resumeGet struct {
	last   string
	status int
	at     time.Time
}

// resumeRecorder is an http.RoundTripper that notes each GET carrying
// Last-Event-ID.
type resumeRecorder struct {
	base *http.Transport
	mu   sync.Mutex
	gets []resumeGet
}

func (r *resumeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if last := req.Header.Get("Last-Event-ID"); req.Method == http.MethodGet && last != "" {
		g := resumeGet{last: last, at: time.Now()}
		if resp != nil {
			g.status = resp.StatusCode
		}
		r.mu.Lock()
		r.gets = append(r.gets, g)
		r.mu.Unlock()
	}
	return resp, err
}

func (r *resumeRecorder) all() []resumeGet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]resumeGet(nil), r.gets...)
}

// TestLastEventIDUnknownStream: a go-sdk client (2025-11-25) has a call in
// progress, its first progress notification received, when switchboard is
// SIGKILLed; a new switchboard with the same sessionKey starts on the same
// port. The client reconnects with Last-Event-ID to take the call's stream
// up; the new process holds none of that stream's events and answers 404,
// so the pending call ends with the client's session-missing error at
// once, instead of waiting on a stream that never brings its answer. The
// client then starts a new session and calls again; the old session ID
// still works for new requests (the new process resumes it).
func TestLastEventIDUnknownStream(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"sessionKey": "secret://env/SB_SESSION_KEY",
		"servers":    map[string]any{"slow": map[string]any{"command": fixture, "args": []string{"--name", "slow"}}},
	})
	env := []string{"SB_SESSION_KEY=" + randomHex(t, 24)}
	startOne := func() *sb {
		t.Helper()
		dir := t.TempDir()
		return startSwitchboardIn(t, dir, dir, nil, env, "--config", cfg, "--replica", "r1", "--log-level", "info", "--listen", addr)
	}
	first := startOne()
	if first.addr != addr {
		t.Fatalf("switchboard listens on %s, want %s", first.addr, addr)
	}
	url := "http://" + addr + "/mcp"

	rec := &resumeRecorder{base: &http.Transport{}}
	t.Cleanup(rec.base.CloseIdleConnections)
	progress := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "resumer", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	oldID := cs.ID()

	type outcome struct {
		err error
		at  time.Time
	}
	done := make(chan outcome, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name:      "mcp_slow_progress",
			Arguments: map[string]any{"steps": 2, "delay_ms": 120_000},
			Meta:      mcp.Meta{"progressToken": "slow"},
		})
		done <- outcome{err, time.Now()}
	}()
	select {
	case <-progress:
	case o := <-done:
		t.Fatalf("the slow call ended before its first progress notification: %v", o.err)
	case <-time.After(30 * time.Second):
		t.Fatal("no progress from the slow call")
	}

	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-first.done
	second := startOne()
	up := time.Now()

	// The client's reconnection: after the retry delay the stream named
	// (1 s), with backoff while the port is closed. Once the new process
	// answers, the call ends at once; before, it waited until ctx.
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatalf("the call in progress at the kill was still waiting %s after the new switchboard was up; resume GETs: %+v", time.Since(up).Round(time.Millisecond), rec.all())
	}
	gets := rec.all()
	t.Logf("resume GETs: %+v; the call ended %s after the new switchboard was up: %v", gets, o.at.Sub(up).Round(time.Millisecond), o.err)
	if o.err == nil {
		t.Fatal("the call in progress at the kill succeeded")
	}
	if len(gets) == 0 || gets[len(gets)-1].status != http.StatusNotFound {
		t.Errorf("the client's reconnection with Last-Event-ID was answered %+v, want 404", gets)
	}
	if !errors.Is(o.err, mcp.ErrSessionMissing) {
		t.Errorf("the pending call failed with %v, want the go-sdk's ErrSessionMissing (start a new session)", o.err)
	}

	// The client starts over: a new session on the new process, whose call
	// is answered.
	fresh := connectHTTP(t, url, nil)
	if fresh.ID() == oldID {
		t.Errorf("the new session has the old one's ID %q", oldID)
	}
	if res := mustCall(t, fresh, "mcp_slow_echo", map[string]any{"text": "again"}); !strings.Contains(textOf(res), "again") {
		t.Errorf("echo after the restart: %q", textOf(res))
	}
	// The old session is not ended by the 404 of its stream: its ID, sealed
	// under the shared key, is resumed for a new request.
	if status, body := postWithSession(t, second.addr, oldID); status != http.StatusOK {
		t.Errorf("a ping naming the old session on the new process: %d %s", status, body)
	}
}

// TestLastEventIDRaw: over raw HTTP, a GET whose Last-Event-ID names a
// stream switchboard does not keep is answered 404, whether the stream
// was this process's (its call answered, nothing kept) or never was
// (another process's, or made up); a malformed one is 400. The session
// goes on.
func TestLastEventIDRaw(t *testing.T) {
	t.Parallel()
	s := startSwitchboard(t, map[string]any{
		"servers": map[string]any{"local": map[string]any{"command": fixture, "args": []string{"--name", "local"}}},
	})
	cs := s.client(t, nil)
	id := cs.ID()
	url := "http://" + s.addr + "/mcp"
	do := func(method, body string, hdr map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	// A call with nothing but its answer to send is answered with plain
	// JSON: no stream, no event IDs.
	plain := do(http.MethodPost, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"mcp_local_echo","arguments":{"text":"hi"}}}`, nil)
	body, _ := io.ReadAll(plain.Body)
	if ct := plain.Header.Get("Content-Type"); ct != "application/json" || !json.Valid(body) || !strings.Contains(string(body), `"id":6`) {
		t.Errorf("a lone echo's answer (%s) is %q: %s; want plain JSON", plain.Status, ct, body)
	}
	// A call's stream: its event IDs (progress comes first).
	resp := do(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp_local_progress","arguments":{"steps":2},"_meta":{"progressToken":"p"}}}`, nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("the call's answer (%s) is %q, want an event stream", resp.Status, ct)
	}
	var ids []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			ids = append(ids, v)
		}
	}
	if len(ids) == 0 {
		t.Fatalf("the call's stream (%s) carried no event IDs", resp.Status)
	}
	last := ids[len(ids)-1]
	stream, _, _ := strings.Cut(last, "_")
	for _, c := range []struct{ what, last string }{
		{"the last event of an answered call", last},
		{"a stream of this session never opened", stream + "z_0"},
		{"a stream of another process, as an earlier switchboard named it", "1_1"},
		{"a stream of another process", "ABCDEFGH.1_1"},
	} {
		get := do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": c.last})
		body, _ := io.ReadAll(io.LimitReader(get.Body, 512))
		if get.StatusCode != http.StatusNotFound {
			t.Errorf("GET with Last-Event-ID %q (%s): %s %q, want 404", c.last, c.what, get.Status, body)
		}
	}
	if get := do(http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "no event"}); get.StatusCode != http.StatusBadRequest {
		t.Errorf("GET with a malformed Last-Event-ID: %s, want 400", get.Status)
	}
	// The session goes on.
	if res := mustCall(t, cs, "mcp_local_echo", map[string]any{"text": "still here"}); !strings.Contains(textOf(res), "still here") {
		t.Errorf("echo after the 404s: %q", textOf(res))
	}
}
