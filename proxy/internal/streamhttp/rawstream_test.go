package streamhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

// TestStandaloneStreamWire: over HTTP/1 the standalone stream, written on
// the connection taken from net/http, is what net/http wrote: 200, the SSE
// headers, a chunked body opening with a comment, one chunk per event;
// and it says the connection closes with it. The session's end ends the
// body properly; a client that leaves ends the stream.
func TestStandaloneStreamWire(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	ss := f.session(t, id)

	nc, err := net.Dial("tcp", strings.TrimPrefix(f.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET / HTTP/1.1\r\nHost: " + strings.TrimPrefix(f.ts.URL, "http://") + "\r\nAccept: text/event-stream\r\n" +
		sessionIDHeader + ": " + id + "\r\n" + protocolVersionHeader + ": 2025-11-25\r\n\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		resp.Header.Get("Cache-Control") != "no-cache, no-transform" || !resp.Close ||
		len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || resp.Header.Get("Date") == "" {
		t.Fatalf("head: %s %v, chunked %q, close %v", resp.Status, resp.Header, resp.TransferEncoding, resp.Close)
	}
	// The comment first, then one event per notification.
	body := bufio.NewReader(resp.Body)
	if line, err := body.ReadString('\n'); err != nil || line != ": ok\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	if line, _ := body.ReadString('\n'); line != "\n" {
		t.Fatalf("comment's end %q", line)
	}
	if err := notifyUntilDelivered(ss, "notifications/tools/list_changed"); err != nil {
		t.Fatal(err)
	}
	event := ""
	for !strings.HasSuffix(event, "\n\n") {
		line, err := body.ReadString('\n')
		if err != nil {
			t.Fatalf("event: %q, %v", event, err)
		}
		event += line
	}
	if event != "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n" {
		t.Fatalf("event %q", event)
	}

	// DELETE ends the session: the body ends with its last chunk, then the
	// connection closes.
	status(t, send(t, f, http.MethodDelete, id, "", v25), http.StatusNoContent)
	if rest, err := io.ReadAll(body); err != nil || len(rest) != 0 {
		t.Fatalf("after DELETE: %q, %v; want the body's proper end", rest, err)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("connection after the last chunk: %d, %v; want it closed", n, err)
	}
}

// TestStandaloneStreamClientLeaves: a client that closes its connection
// ends the stream at once: the session has nowhere to send, and a new
// GET is taken.
func TestStandaloneStreamClientLeaves(t *testing.T) {
	f := serve(t)
	id := initialize(t, f, nil)
	stream := get(t, f, id, v25)
	if line, err := bufio.NewReader(stream.Body).ReadString('\n'); err != nil || line != ": ok\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	c := f.h.sessions[id]
	if !c.Listening() {
		t.Fatal("not listening with the GET stream open")
	}
	stream.Body.Close() // closes the connection: the body was not read to its end
	testutil.Eventually(t, 5*time.Second, "the stream to end", func() bool { return !c.Listening() })
	again := get(t, f, id, v25)
	if again.StatusCode != http.StatusOK {
		t.Fatalf("GET after the client left: %s", again.Status)
	}
}

// TestStandaloneStreamHTTP2: where the connection cannot be taken (HTTP/2),
// net/http holds the stream, which works as before.
func TestStandaloneStreamHTTP2(t *testing.T) {
	checkGoroutines(t)
	f := newFixture(t, nil)
	ts := httptest.NewUnstartedServer(f.h)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	id := initialize(t, f, nil) // over HTTP/1
	plain := f.ts
	f.ts = ts // the fixture's cleanup closes it
	t.Cleanup(plain.Close)
	stream := get(t, f, id, v25)
	if stream.ProtoMajor != 2 || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s over %s", stream.Status, stream.Proto)
	}
	br := bufio.NewReader(stream.Body)
	if line, err := br.ReadString('\n'); err != nil || line != ": ok\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	ss := f.session(t, id)
	if err := notifyUntilDelivered(ss, "notifications/tools/list_changed"); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "notifications/tools/list_changed") {
			break
		}
	}
}
