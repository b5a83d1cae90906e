package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// stuck is a stream whose client does not read: every Write blocks until
// the test lets it go, then fails as a write past its deadline does.
type stuck struct {
	entered chan struct{} // one value per Write begun
	release chan struct{} // closed to end every Write
	mu      sync.Mutex
	wrote   []jsonrpc.Message
}

func newStuck() *stuck {
	return &stuck{entered: make(chan struct{}, 1024), release: make(chan struct{})}
}

func (s *stuck) Write(_ context.Context, msg jsonrpc.Message) error {
	s.entered <- struct{}{}
	<-s.release
	s.mu.Lock()
	s.wrote = append(s.wrote, msg)
	s.mu.Unlock()
	return fmt.Errorf("stream write: %w", os.ErrDeadlineExceeded)
}

// TestNotifyNeverWaitsForTheClient: with the session's stream stuck in a
// write, notifications return at once, the queue stays within MaxQueued
// (what does not fit is dropped, a list change is queued once and never
// dropped), and the write failing at its deadline ends the session.
func TestNotifyNeverWaitsForTheClient(t *testing.T) {
	out := newStuck()
	const limit = 64 << 10
	s := newSession(t, session.Options{MaxQueued: limit}, out)
	ctx := context.Background()
	if err := s.Notify(ctx, "notifications/tools/list_changed", nil); err != nil {
		t.Fatal(err)
	}
	<-out.entered // the sender is now blocked in the client's stream

	big := strings.Repeat("x", 1024)
	start := time.Now()
	for i := range 10000 { // ~10 MB of log messages
		p := &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("%d %s", i, big)}
		if err := s.Notify(ctx, "notifications/message", p); err != nil {
			t.Fatalf("Notify %d: %v", i, err)
		}
		if i%1000 == 0 {
			if err := s.Notify(ctx, "notifications/tools/list_changed", nil); err != nil {
				t.Fatalf("list_changed: %v", err)
			}
		}
	}
	if err := s.Notify(ctx, "notifications/prompts/list_changed", nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("10,000 notifications of 1 KiB to a stuck stream took %v", time.Since(start))

	close(out.release) // the blocked write fails as past its deadline
	select {
	case <-s.Done():
	case <-time.After(wait):
		t.Fatal("the session did not end after its stream's write deadline passed")
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.wrote) != 1 {
		t.Fatalf("%d writes after the stream failed, want only the one that failed", len(out.wrote))
	}
}

// TestOutboxBound: while the stream is stuck, what waits is bounded by
// MaxQueued; once it moves, the queued notifications arrive in order, the
// list change once, and the sender goroutine ends with the queue.
func TestOutboxBound(t *testing.T) {
	gate := make(chan struct{})
	out := &gated{recorder: newRecorder(), gate: gate}
	const limit = 16 << 10
	s := newSession(t, session.Options{MaxQueued: limit}, out)
	ctx := context.Background()
	before := runtime.NumGoroutine()
	_ = s.Notify(ctx, "notifications/message", &mcp.LoggingMessageParams{Level: "info", Data: "first"})
	<-out.entered()
	for i := range 200 {
		_ = s.Notify(ctx, "notifications/message", &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("%03d %s", i, strings.Repeat("y", 1000))})
		_ = s.Notify(ctx, "notifications/resources/list_changed", nil)
	}
	close(gate)
	var got []string
	changes := 0
	deadline := time.After(wait)
	for {
		select {
		case m := <-out.ch:
			r := m.(*jsonrpc.Request)
			if r.Method == "notifications/resources/list_changed" {
				changes++
				continue
			}
			var p mcp.LoggingMessageParams
			if err := json.Unmarshal(r.Params, &p); err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Data.(string)[:min(3, len(p.Data.(string)))])
			continue
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
		}
		break
	}
	// 16 KiB holds 15 of the ~1 KiB messages behind the one in the write.
	if len(got) < 2 || len(got) > 1+limit/1000 {
		t.Fatalf("%d log messages delivered, want the first and at most %d queued", len(got), limit/1000)
	}
	for i := 2; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("out of order: %v", got)
		}
	}
	if changes != 1 {
		t.Fatalf("%d list_changed delivered, want 1 (queued once)", changes)
	}
	// The sender exits with the queue: no goroutine per idle session.
	testutil.Eventually(t, time.Second, fmt.Sprintf("goroutines back to the %d before the queue filled", before), func() bool {
		return runtime.NumGoroutine() <= before
	})
	select {
	case <-s.Done():
		t.Fatal("the session ended: its client was reading")
	default:
	}
}

// gated is a recorder whose writes wait for the gate.
type gated struct {
	*recorder
	gate  chan struct{}
	began chan struct{}
	once  sync.Once
}

func (g *gated) entered() chan struct{} {
	g.once.Do(func() { g.began = make(chan struct{}, 1024) })
	return g.began
}

func (g *gated) Write(ctx context.Context, msg jsonrpc.Message) error {
	g.entered() <- struct{}{}
	<-g.gate
	return g.recorder.Write(ctx, msg)
}
