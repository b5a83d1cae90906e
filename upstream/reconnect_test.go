package upstream_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// A remote server that goes away (#17), on in-memory sessions in a synctest
// bubble: the fake's connections refuse every write while it is down, as a
// stateless HTTP server's POSTs are refused, and new connections fail.

// outage switches the fake remote server off and on.
type outage struct {
	f    *fakeUpstream
	down atomic.Bool
}

func (o *outage) set(down bool) {
	o.down.Store(down)
	o.f.mu.Lock()
	o.f.refusing = down
	o.f.mu.Unlock()
}

func (o *outage) transport(sp upstream.Spec) (mcp.Transport, error) {
	t, err := o.f.transport(sp)
	if err != nil {
		return nil, err
	}
	return &outageTransport{Transport: t, o: o}, nil
}

type outageTransport struct {
	mcp.Transport
	o *outage
}

func (t *outageTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &outageConn{Connection: c, o: t.o}, nil
}

type outageConn struct {
	mcp.Connection
	o *outage
}

func (c *outageConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if c.o.down.Load() {
		return errors.New("post: dial tcp 127.0.0.1:9: connect: connection refused")
	}
	return c.Connection.Write(ctx, msg)
}

// remoteBubble is bubble for one remote server behind an outage switch.
func remoteBubble(t *testing.T, fn func(t *testing.T, o *outage, h *upstream.Handle)) {
	t.Helper()
	checkGoroutines(t)
	o := &outage{f: newFakeUpstream()}
	defer upstream.SetTestTransport(o.transport)()
	synctest.Test(t, func(t *testing.T) {
		defer o.f.closeAll()
		spec := fakeSpec("web")
		spec.Transport, spec.Command, spec.URL = upstream.TransportHTTP, "", "http://127.0.0.1:9/mcp"
		spec.BreakerFailures = 3
		h := newHandle(t, spec)
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		if st := h.Status(); st.State != upstream.StateReady {
			t.Fatalf("not ready: %+v", st)
		}
		fn(t, o, h)
	})
}

// wantUnreachable calls echo and fails unless it got the documented error
// at once.
func wantUnreachable(t *testing.T, h *upstream.Handle, retry string) {
	t.Helper()
	start := time.Now()
	_, err := call(h, context.Background(), "echo")
	want := "server 'web' is unreachable, retrying in ~" + retry
	if err == nil || err.Error() != want {
		t.Errorf("call at %s: %v, want %q", time.Now().Format("15:04:05.000"), err, want)
	}
	if !errors.Is(err, upstream.ErrUnavailable) {
		t.Errorf("error does not wrap ErrUnavailable: %v", err)
	}
	if d := time.Since(start); d != 0 {
		t.Errorf("call took %s, want to fail fast", d)
	}
}

func TestRemoteTransportFailureEndsSession(t *testing.T) {
	remoteBubble(t, func(t *testing.T, o *outage, h *upstream.Handle) {
		cat := h.Catalog()
		o.set(true)
		wantUnreachable(t, h, "1s")
		// The session ends at once, without waiting for the connection to
		// notice: status says so, and the tools stay listed.
		synctest.Wait()
		st := h.Status()
		if st.State != upstream.StateRestarting || !strings.Contains(st.LastError, "connection refused") {
			t.Fatalf("after the failed call: %+v", st)
		}
		if h.Catalog() != cat {
			t.Error("catalog changed while reconnecting")
		}
		if n := upstream.BreakerConsecutiveFailures(h); n != 1 {
			t.Errorf("breaker counted %d failures, want 1", n)
		}
		// Calls refused while it reconnects count too: the third opens it.
		wantUnreachable(t, h, "1s")
		wantUnreachable(t, h, "1s")
		if st := h.Status(); st.Breaker != "open" {
			t.Errorf("breaker %s after 3 unreachable calls", st.Breaker)
		}
		// The message stays the documented one while the breaker is open.
		wantUnreachable(t, h, "1s")
	})
}

func TestRemoteCallAsksForEarlyAttempt(t *testing.T) {
	remoteBubble(t, func(t *testing.T, o *outage, h *upstream.Handle) {
		o.set(true)
		wantUnreachable(t, h, "1s")
		lost := time.Now()
		// Nobody calls: the attempts follow the backoff (1, 2, 4 s after
		// the session ended; the next is due at 15 s).
		time.Sleep(10 * time.Second)
		synctest.Wait()
		at := o.f.attemptTimes()
		if len(at) != 4 {
			t.Fatalf("%d attempts in 10 s, want the first connect and 3 retries", len(at))
		}
		next := h.Status().NextAttempt
		within(t, "next scheduled attempt", next.Sub(lost), 15*time.Second)
		failures := h.Status().Failures

		// A call asks for an attempt now. It fails too: the schedule and the
		// failure count stay.
		wantUnreachable(t, h, "1s")
		synctest.Wait()
		if n := len(o.f.attemptTimes()); n != 5 {
			t.Fatalf("%d attempts after a call, want one more", n)
		}
		if st := h.Status(); !st.NextAttempt.Equal(next) || st.Failures != failures || st.State != upstream.StateRestarting {
			t.Errorf("an early attempt moved the schedule: %+v, want next %s and %d failures", st, next, failures)
		}
		// Within a second of it, calls ask for none.
		time.Sleep(500 * time.Millisecond)
		wantUnreachable(t, h, "1s")
		synctest.Wait()
		if n := len(o.f.attemptTimes()); n != 5 {
			t.Fatalf("%d attempts, want no attempt within a second of the last", n)
		}

		// The server is back: the next call's attempt reconnects, closes
		// the breaker, and the call after it is served.
		time.Sleep(600 * time.Millisecond)
		o.set(false)
		back := time.Now()
		wantUnreachable(t, h, "1s")
		synctest.Wait()
		st := h.Status()
		if st.State != upstream.StateReady || st.Breaker != "closed" {
			t.Fatalf("after the server came back: %+v", st)
		}
		if d := time.Since(back); d != 0 {
			t.Errorf("reconnected %s after the call, want at once", d)
		}
		if _, err := call(h, context.Background(), "echo"); err != nil {
			t.Fatalf("call after the reconnect: %v", err)
		}
	})
}

func TestStdioRestartingMessageUnchanged(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		h := newHandle(t, fakeSpec("local"))
		h.Start()
		defer h.Close(context.Background())
		synctest.Wait()
		f.cut()
		synctest.Wait()
		for range 3 {
			_, err := call(h, context.Background(), "echo")
			if err == nil || err.Error() != "server 'local' is restarting, next attempt in ~1s" {
				t.Fatalf("call while a stdio server restarts: %v", err)
			}
		}
		if n := upstream.BreakerConsecutiveFailures(h); n != 0 {
			t.Errorf("calls refused while a stdio server restarts counted %d breaker failures", n)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := len(f.attemptTimes()); n != 2 {
			t.Errorf("%d attempts, want the backoff's alone", n)
		}
	})
}
