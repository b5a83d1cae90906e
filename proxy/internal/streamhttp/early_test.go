package streamhttp

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAnswerEarly: a 2026-07-28 POST answered while its request goes on
// (a call that asked for input) holds its HTTP/1 connection until the
// request ends, so the client must not send its next request there. The
// answer says Connection: close when it is the whole response, and the
// client's next requests are served meanwhile either way.
func TestAnswerEarly(t *testing.T) {
	f := serve(t)
	hdr := map[string]string{protocolVersionHeader: v20260728, methodHeader: "tools/call", nameHeader: "early"}
	call := func(meta string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"early","arguments":{},"_meta":{` + meta +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	echo := func() {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"next"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := rawSendCtx(ctx, f, http.MethodPost, "", strings.NewReader(body), map[string]string{protocolVersionHeader: v20260728, methodHeader: "tools/call", nameHeader: "echo"})
		if err != nil {
			t.Fatalf("the next request while the first goes on: %v", err)
		}
		defer resp.Body.Close()
		if got := strings.Join(events(t, resp), "\n"); !strings.Contains(got, `"text":"next"`) {
			t.Fatalf("the next request answered %s", got)
		}
	}

	// The whole response: one event, and Connection: close.
	resp := post(t, f, "", call(""), hdr)
	got := strings.Join(events(t, resp), "\n")
	if resp.StatusCode != http.StatusOK || !resp.Close || !strings.Contains(got, "answered early") {
		t.Fatalf("early answer: %s, close %v, %s; want 200, Connection: close and the answer", resp.Status, resp.Close, got)
	}
	echo() // on the client's pool: not the held connection
	f.resume <- struct{}{}

	// A progress notification went out first: the stream was open
	// already. The answer comes at once; the stream ends with the request.
	resp = post(t, f, "", call(`"progressToken":"p",`), hdr)
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	for sc.Scan() && !strings.Contains(sc.Text(), "answered early") {
		seen = append(seen, sc.Text())
	}
	if sc.Err() != nil || !strings.Contains(strings.Join(seen, "\n"), "notifications/progress") {
		t.Fatalf("streamed early answer: %v after %q", sc.Err(), seen)
	}
	echo()
	f.resume <- struct{}{}
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			t.Errorf("after the answer: %s", line)
		}
	}
}
