package upstream

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoUpstream is an in-memory MCP server with one tool, "echo", that every
// Handle dials while the test runs. It must be called inside the bubble;
// the returned function closes the server's sessions so the bubble can end.
func echoUpstream(t *testing.T) (closeAll func()) {
	server := mcp.NewServer(&mcp.Implementation{Name: "echo"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	var mu sync.Mutex
	var sessions []*mcp.ServerSession
	old := testTransport
	testTransport = func(Spec) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := server.Connect(context.Background(), st, nil)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return ct, nil
	}
	t.Cleanup(func() { testTransport = old })
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
		}
	}
}

func echoSpec() Spec {
	return Spec{Name: "echo", Transport: TransportStdio, Command: "unused",
		ConnectTimeout: 5 * time.Second, CallTimeout: 10 * time.Second, RestartOnCrash: true, MaxRestarts: 5}
}

// callEcho calls the echo tool and reports how long it took on the
// bubble's clock.
func callEcho(h *Handle) (time.Duration, error) {
	start := time.Now()
	_, err := h.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo"}, nil)
	return time.Since(start), err
}

// TestCallWaitingForASessionGetsItWhenSet plays the supervisor's part by
// hand: a call that finds no usable session while the server is ready or
// starting waits, and gets the session at the very moment it is set,
// whether or not the state changes with it. A call that polled would take
// a tick of the bubble's clock; one that waited for a state change alone
// would never return (the bubble reports a deadlock).
func TestCallWaitingForASessionGetsItWhenSet(t *testing.T) {
	for _, state := range []State{StateReady, StateStarting} {
		t.Run(string(state), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				defer echoUpstream(t)()
				h := New(echoSpec(), Options{})
				h.Start()
				defer h.Close(context.Background())
				synctest.Wait()
				s := h.sess.load()
				if s == nil || h.sup.current() != StateReady {
					t.Fatalf("not ready: %+v", h.Status())
				}
				h.sess.withdraw()
				if state != StateReady {
					h.sup.setState(state, "")
				}
				type result struct {
					took time.Duration
					err  error
				}
				done := make(chan result, 1)
				go func() {
					took, err := callEcho(h)
					done <- result{took, err}
				}()
				synctest.Wait()
				select {
				case r := <-done:
					t.Fatalf("the call returned without a session: %v", r.err)
				default:
				}
				h.sess.publish(h.life.ctx, s, time.Second)
				r := <-done
				if r.err != nil || r.took != 0 {
					t.Errorf("call: %v after %s, want an answer at once", r.err, r.took)
				}
				if state != StateReady {
					h.sup.setState(StateReady, "")
				}
			})
		})
	}
}

// TestCallsRacingASessionBeingSet: calls that arrive while the session is
// being published, with no pause between, all get it; none misses the
// publish and waits for one that never comes.
func TestCallsRacingASessionBeingSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer echoUpstream(t)()
		h := New(echoSpec(), Options{})
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		s := h.sess.load()
		const calls = 8
		for range 200 {
			h.sess.withdraw()
			var wg sync.WaitGroup
			errs := make(chan error, calls)
			for range calls {
				wg.Go(func() {
					if took, err := callEcho(h); err != nil || took != 0 {
						errs <- err
					}
				})
			}
			h.sess.publish(h.life.ctx, s, time.Second)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("a call racing the publish: %v (or it waited)", err)
			}
		}
	})
}
