package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAbuseEndlessPagination: a server whose tools/list hands out a further
// cursor on every page, 100 tools of about 1 KiB each a page, is followed
// only up to the listing limits (100 pages, 10,000 items): it ends failed,
// with an error naming the limit, and listing it (a client's tools/list
// starting it, then restarts that list it anew) grows switchboard's RSS by
// at most 32 MiB. See #17.
func TestAbuseEndlessPagination(t *testing.T) {
	const token = "abuse-reload-token-42"
	s := startSwitchboard(t, map[string]any{
		"logLevel": "info",
		"admin":    map[string]any{"reloadToken": token},
		"mcpServers": map[string]any{
			"fx":      fixtureServer("fx"),
			"endless": with(fixtureServer("endless", "--endless-pages", "100"), "lazy", true, "maxRestarts", 1),
		},
	})
	s.waitServer(t, "fx", 30*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	cs := s.client(t, nil)
	before := readRSS(s.pid())
	stop := rssPeak(s.pid())

	start := time.Now()
	tools := listTools(t, cs) // starts the lazy server and waits for its first attempt
	failed := func(st serverState) bool { return st.State == "failed" }
	st := s.waitServer(t, "endless", 60*time.Second, "failed", failed)
	t.Logf("first listing: %s until failed after %d restart(s): %q; the client listed %d tools", time.Since(start).Round(time.Millisecond), st.Restarts, st.LastError, len(tools))
	for name := range tools {
		if strings.HasPrefix(name, "mcp_endless_") {
			t.Errorf("a tool of the endless server was listed: %s", name)
			break
		}
	}
	if !strings.Contains(st.LastError, "more than 100 pages") && !strings.Contains(st.LastError, "more than 10000 items") && !strings.Contains(st.LastError, "more than 4 MiB") {
		t.Errorf("the endless server's error does not name the page, item or size limit: %q", st.LastError)
	}
	const relists = 3
	for i := range relists {
		restartServer(t, s, "endless", token)
		s.waitServer(t, "endless", 60*time.Second, "failed again", func(st serverState) bool {
			return st.State == "failed" && st.Restarts > 0 && st.Failures > 0
		})
		tools = listTools(t, cs)
		t.Logf("restart %d: failed again; the client lists %d tools; RSS %s", i+1, len(tools), mib(readRSS(s.pid())))
	}
	peak := stop()
	t.Logf("%d listings of the endless server in %s; RSS %s before, %s at peak (+%s), %s after",
		2*(relists+1), time.Since(start).Round(time.Millisecond), mib(before), mib(peak), mib(peak-before), mib(readRSS(s.pid())))
	if peak-before > 32<<10 {
		overRSS(t, "RSS grew by %s listing the endless server, more than 32 MiB", mib(peak-before))
	}
}

// restartServer asks the admin listener to restart a server now.
func restartServer(t *testing.T, s *sb, name, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.admin+"/admin/restart/"+name, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("restart %s: status %d", name, resp.StatusCode)
	}
}

// maxInFlight is the requests one session runs at once (docs/config.md,
// Limits).
const maxInFlight = 256

// TestAbuseBatch: one JSON-RPC batch of 20,000 tools/call requests to a
// slow tool (protocol 2025-03-26 allows batches) fits the 4 MiB body limit,
// so it is bounded instead: at most 256 of them run upstream at once, the
// rest are answered with an error at once, and every request gets its
// answer. See #17.
func TestAbuseBatch(t *testing.T) {
	const n = 20000
	conc := filepath.Join(t.TempDir(), "concurrency")
	s := startSwitchboard(t, map[string]any{
		"logLevel":   "info",
		"mcpServers": map[string]any{"fx": fixtureServer("fx", "--concurrency-file", conc)},
	})
	s.waitServer(t, "fx", 30*time.Second, "ready", func(st serverState) bool { return st.State == "ready" })
	waitRouted(t, s, "mcp_fx_sleep")
	o := newOpener(t, "http://"+s.addr+"/mcp", "", 1)
	o.version = "2025-03-26"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sid, _, err := o.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if status, _, _, err := o.post(ctx, sid, notification("notifications/initialized", nil)); err != nil || status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %v", status, err)
	}
	batch := make([]json.RawMessage, n)
	for i := range batch {
		batch[i] = request(int64(i+1), "tools/call", map[string]any{"name": "mcp_fx_sleep", "arguments": map[string]any{"ms": 3000}})
	}
	body, _ := json.Marshal(batch)

	before := readRSS(s.pid())
	stop := rssPeak(s.pid())
	start := time.Now()
	status, _, answer, err := o.post(ctx, sid, body)
	took := time.Since(start)
	peak := stop()
	if err != nil {
		t.Fatalf("batch POST: %v", err)
	}
	t.Logf("batch of %d tools/call, %.2f MiB: status %d after %s; RSS %s before, %s at peak (+%s)",
		n, float64(len(body))/(1<<20), status, took.Round(time.Millisecond), mib(before), mib(peak), mib(peak-before))
	if status == http.StatusRequestEntityTooLarge {
		t.Logf("refused by the 4 MiB body limit: %s", bytes.TrimSpace(answer))
		return
	}
	if status != http.StatusOK {
		t.Fatalf("batch POST: status %d: %s", status, answer)
	}
	ran, refused, other := tallyBatch(t, answer)
	most := readInt(t, conc)
	t.Logf("bounded: %d ran, %d refused (%q), %d other; at most %d ran upstream at once (limit %d)", ran, refused, refusal, other, most, maxInFlight)
	if ran+refused+other != n {
		t.Errorf("%d answers to %d requests", ran+refused+other, n)
	}
	if most > maxInFlight || ran < 1 {
		t.Errorf("%d calls ran upstream at once (%d in all); want 1 to %d", most, ran, maxInFlight)
	}
	if other > 0 {
		t.Errorf("%d answers neither a result nor the in-flight refusal", other)
	}
}

// refusal is the error a request over the session's in-flight bound gets.
var refusal = fmt.Sprintf("too many requests in flight on this session (limit %d)", maxInFlight)

// tallyBatch counts a batch's answers, as a JSON array or an event
// stream: results, refusals over the in-flight bound, and anything else.
func tallyBatch(t *testing.T, answer []byte) (ran, refused, other int) {
	t.Helper()
	var msgs []rpcMsg
	if err := json.Unmarshal(answer, &msgs); err != nil {
		_ = sseEvents(bytes.NewReader(answer), func(_, data string) bool {
			var batch []rpcMsg
			if json.Unmarshal([]byte(data), &batch) == nil {
				msgs = append(msgs, batch...)
				return true
			}
			var m rpcMsg
			if json.Unmarshal([]byte(data), &m) == nil {
				msgs = append(msgs, m)
			}
			return true
		})
	}
	for _, m := range msgs {
		switch {
		case !m.isResponse():
		case m.Error != nil && m.Error.Message == refusal:
			refused++
		case m.Error == nil && !bytes.Contains(m.Result, []byte(`"isError":true`)):
			ran++
		default:
			if other++; other == 1 {
				t.Logf("first other answer: %s", js(m))
			}
		}
	}
	return ran, refused, other
}

// readInt reads a file holding a number.
func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}
