package streamhttp

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

// sseEvent is one event of a stream as a client parses it.
type sseEvent struct {
	id, data string
	retry    bool
}

// idBeforeProgress reads resp's stream up to its first progress
// notification and returns the last event ID seen by then ("" if none).
func idBeforeProgress(resp *http.Response) string {
	sc := bufio.NewScanner(resp.Body)
	var last string
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			last = v
		}
		if strings.Contains(sc.Text(), "notifications/progress") {
			break
		}
	}
	return last
}

// readSSE reads a whole event stream.
func readSSE(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur != (sseEvent{}) {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "retry: "):
			cur.retry = true
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out
}

// TestResumeAfterPause: a call whose stream is paused (its upstream closed
// its own) writes nothing more on its POST after a priming event and a
// retry field; what it writes then, its answer included, comes on the GET
// that names the last event seen; the stream cannot be taken up twice.
func TestResumeAfterPause(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	resp := post(t, f, id, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pause"}}`, v25)
	// A lone call runs on its POST's goroutine: the POST ends once the
	// call returns, with nothing after the pause on it.
	f.resume <- struct{}{}
	evs := readSSE(t, resp)
	if len(evs) < 1 || evs[0].data != "" || evs[0].id == "" || !evs[0].retry {
		t.Fatalf("paused stream: %+v, want a priming event with an ID and a retry field", evs)
	}
	for _, e := range evs {
		if e.data != "" {
			t.Fatalf("the paused stream carried %q", e.data)
		}
	}
	got := readSSE(t, get(t, f, id, map[string]string{lastEventIDHeader: evs[0].id}))
	if len(got) != 2 || !strings.Contains(got[0].data, "notifications/progress") || !strings.Contains(got[1].data, "after the pause") || got[1].id == "" {
		t.Fatalf("resumed stream: %+v", got)
	}
	// Replayed once: a second resume is refused at once (404), not given
	// a stream that would bring nothing.
	if again := get(t, f, id, map[string]string{lastEventIDHeader: evs[0].id}); again.StatusCode != http.StatusNotFound {
		t.Fatalf("second resume: %s, want 404", again.Status)
	}
}

// TestResumeAfterDisconnect: a client that drops a POST's stream mid-call,
// after its first event, takes it up with that event's ID and gets the
// answer written meanwhile; a 2025-06-18 stream has no IDs.
func TestResumeAfterDisconnect(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	resp := post(t, f, id, `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"notify_wait"}}`, v25)
	last := idBeforeProgress(resp)
	if last == "" {
		t.Fatal("no event ID before the progress notification")
	}
	resp.Body.Close()
	testutil.Eventually(t, 5*time.Second, "the stream kept for a GET", func() bool {
		f.h.mu.Lock()
		c := f.h.sessions[id]
		f.h.mu.Unlock()
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.detached) == 1
	})
	f.resume <- struct{}{}
	got := readSSE(t, get(t, f, id, map[string]string{lastEventIDHeader: last}))
	if len(got) != 1 || !strings.Contains(got[0].data, `"id":"w"`) || !strings.Contains(got[0].data, "after the wait") {
		t.Fatalf("resumed stream: %+v", got)
	}

	old := post(t, f, id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, map[string]string{protocolVersionHeader: "2025-06-18"})
	for _, e := range readSSE(t, old) {
		if e.id != "" || e.retry {
			t.Fatalf("a 2025-06-18 stream has event IDs: %+v", e)
		}
	}
}

// TestResumeOtherProcess: a stream's ID names the process that made it.
// A Last-Event-ID with the same stream number made by another process
// (one that held the session before it was resumed here, in this or an
// earlier format) is answered 404 and does not take up this process's
// stream of that number, which its own ID still resumes.
func TestResumeOtherProcess(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	resp := post(t, f, id, `{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"notify_wait"}}`, v25)
	// A test that stops early lets the call end, so the fixture can close.
	answered := false
	t.Cleanup(func() {
		if !answered {
			f.resume <- struct{}{}
		}
	})
	last := idBeforeProgress(resp)
	resp.Body.Close()
	i := strings.LastIndexByte(last, '_')
	epoch, number, named := strings.Cut(last[:max(i, 0)], ".")
	if i < 0 || !named || epoch == "" {
		t.Fatalf("event ID %q does not name its process: want <epoch>.<stream>_<event>", last)
	}
	testutil.Eventually(t, 5*time.Second, "the stream kept for a GET", func() bool {
		f.h.mu.Lock()
		c := f.h.sessions[id]
		f.h.mu.Unlock()
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.detached) == 1
	})
	// Epochs are upper-case: "other" is never this process's.
	for _, foreign := range []string{"other." + number + last[i:], number + last[i:]} {
		status(t, get(t, f, id, map[string]string{lastEventIDHeader: foreign}), http.StatusNotFound)
	}
	f.resume <- struct{}{}
	answered = true
	got := readSSE(t, get(t, f, id, map[string]string{lastEventIDHeader: last}))
	if len(got) != 1 || !strings.Contains(got[0].data, "after the wait") {
		t.Fatalf("this process's stream, resumed after the foreign IDs: %+v", got)
	}
}

// TestPrimingEvent: the priming event carries the stream's first event ID,
// the retry delay in milliseconds and an empty data line, and parses back
// to the stream and event 0.
func TestPrimingEvent(t *testing.T) {
	s := &stream{id: "ep.1z"}
	got := string(s.appendPriming([]byte("x")))
	want := "xid: " + s.eventID(0) + "\nretry: " + strconv.FormatInt(retryDelay.Milliseconds(), 10) + "\ndata: \n\n"
	if got != want {
		t.Errorf("priming event %q, want %q", got, want)
	}
	if id, n, ok := parseEventID(s.eventID(0)); !ok || id != s.id || n != 0 {
		t.Errorf("the priming ID parses to %q, %d, %v", id, n, ok)
	}
}
