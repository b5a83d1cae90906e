package streamhttp

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// TestContinuity: IDs come from Mint; an ID not held is resumed once
// however many requests race for it, errors of Resume get their statuses,
// and a session that ended here (DELETE, or closed by the server) is not
// resumed.
func TestContinuity(t *testing.T) {
	f := newFixture(t, nil)
	var resumes atomic.Int32
	f.h.SetContinuity(Continuity{
		Mint: func(r *http.Request, init *jsonrpc.Request) string {
			if init.Method != methodInitialize {
				t.Errorf("Mint got %q", init.Method)
			}
			return "minted-" + principal(r)
		},
		Resume: func(r *http.Request, id string) (*session.Session, error) {
			switch {
			case strings.HasPrefix(id, "gone"):
				return nil, fmt.Errorf("%w: no", ErrNoSession)
			case strings.HasPrefix(id, "theirs"):
				return nil, ErrNotYours
			case strings.HasPrefix(id, "full"):
				return nil, session.ErrSessionLimit
			case strings.HasPrefix(id, "broken"):
				return nil, fmt.Errorf("vault is down")
			}
			resumes.Add(1)
			return session.New(session.Options{ID: id, Principal: principal(r), Methods: f.methods(),
				Resumed: &session.Resumed{Version: "2025-11-25", Caps: []byte(`{"roots":{}}`)}}, nil), nil
		},
	})

	if id := initialize(t, f, map[string]string{"Authorization": "alice"}); id != "minted-alice" {
		t.Fatalf("initialize gave the ID %q, want Mint's", id)
	}

	// Eight requests race for one ID no one holds: one resume.
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Go(func() {
			resp, err := rawSend(f, http.MethodPost, "elsewhere", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), v25)
			if err != nil {
				t.Error(err)
				return
			}
			codes[i] = resp.StatusCode
			resp.Body.Close()
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("racing request %d: status %d", i, c)
		}
	}
	if n, held := resumes.Load(), f.h.Resumed(); held != 1 || n < 1 {
		t.Errorf("%d resumes called, %d held; want one held (a loser is closed)", n, held)
	}
	if f.h.Sessions() != 2 {
		t.Errorf("%d sessions held, want 2 (minted and resumed)", f.h.Sessions())
	}

	for id, want := range map[string]int{"gone-1": http.StatusNotFound, "theirs-1": http.StatusNotFound, "full-1": http.StatusTooManyRequests, "broken-1": http.StatusInternalServerError} {
		status(t, post(t, f, id, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, v25), want)
	}

	// A GET for another process's stream of a session not held here is
	// 404 without resuming the session: that stream cannot be here.
	before := resumes.Load()
	status(t, get(t, f, "elsewhere-2", map[string]string{lastEventIDHeader: "ABCDEFGH.1_3"}), http.StatusNotFound)
	if resumes.Load() != before {
		t.Error("a session was resumed for a GET naming another process's stream")
	}

	// DELETE ends it for good here: no resume, on any method.
	status(t, send(t, f, http.MethodDelete, "elsewhere", "", v25), http.StatusNoContent)
	before = resumes.Load()
	status(t, post(t, f, "elsewhere", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, v25), http.StatusNotFound)
	status(t, get(t, f, "elsewhere", v25), http.StatusNotFound)
	if resumes.Load() != before {
		t.Error("a session ended with DELETE was resumed")
	}

	// So does a session that ended on the server's side (idle, too slow).
	status(t, post(t, f, "closed-here", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, v25), http.StatusOK)
	f.h.mu.Lock()
	c := f.h.sessions["closed-here"]
	f.h.mu.Unlock()
	c.sess.Close()
	before = resumes.Load()
	status(t, post(t, f, "closed-here", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, v25), http.StatusNotFound)
	if resumes.Load() != before {
		t.Error("a session the server ended was resumed")
	}
}

func TestEndedIDsForgetOldest(t *testing.T) {
	var e endedIDs
	for i := range maxEnded + 10 {
		e.add(fmt.Sprint(i))
	}
	if len(e.set) != maxEnded || len(e.order) != maxEnded {
		t.Fatalf("%d remembered, %d in order; want %d", len(e.set), len(e.order), maxEnded)
	}
	for i, want := range map[int]bool{0: false, 9: false, 10: true, maxEnded + 9: true} {
		if e.has(fmt.Sprint(i)) != want {
			t.Errorf("has(%d) = %v, want %v", i, !want, want)
		}
	}
}

// TestMaxAge: a session whose ID was issued longer ago than the max age
// ends at its next request, which gets 404, and is not resumed after; one
// within it is served, and so is every session once the max age is 0.
func TestMaxAge(t *testing.T) {
	f := newFixture(t, nil)
	issued := map[string]time.Time{"minted-old": time.Now().Add(-2 * time.Hour), "minted-new": time.Now()}
	var resumes atomic.Int32
	f.h.SetContinuity(Continuity{
		Mint: func(r *http.Request, _ *jsonrpc.Request) string { return "minted-" + principal(r) },
		Resume: func(*http.Request, string) (*session.Session, error) {
			resumes.Add(1)
			return nil, ErrNoSession
		},
		Issued: func(id string) time.Time { return issued[id] },
	})
	f.h.SetMaxAge(time.Hour)
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	// The initialize is answered (the ID is new here); the next request
	// is not.
	resp := post(t, f, "", initBody, map[string]string{"Authorization": "old"})
	old := resp.Header.Get(sessionIDHeader)
	if resp.StatusCode != http.StatusOK || old != "minted-old" {
		t.Fatalf("initialize: %s, ID %q", resp.Status, old)
	}
	recent := initialize(t, f, map[string]string{"Authorization": "new"})
	status(t, post(t, f, recent, ping, map[string]string{"Authorization": "new", protocolVersionHeader: "2025-11-25"}), http.StatusOK)
	status(t, post(t, f, old, ping, map[string]string{"Authorization": "old", protocolVersionHeader: "2025-11-25"}), http.StatusNotFound)
	if !closed(f.session(t, old)) {
		t.Error("the session past its max age is still open")
	}
	status(t, post(t, f, old, ping, map[string]string{"Authorization": "old", protocolVersionHeader: "2025-11-25"}), http.StatusNotFound)
	if resumes.Load() != 0 {
		t.Error("a session that ended at its max age was resumed")
	}
	f.h.SetMaxAge(0)
	issued["minted-again"] = issued["minted-old"]
	again := initialize(t, f, map[string]string{"Authorization": "again"})
	status(t, post(t, f, again, ping, map[string]string{"Authorization": "again", protocolVersionHeader: "2025-11-25"}), http.StatusOK)
}
