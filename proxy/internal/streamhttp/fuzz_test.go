package streamhttp

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzPOST: whatever a client POSTs to a session, the handler answers with
// one of the statuses the transport uses, and the session goes on answering.
func FuzzPOST(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"roots"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`{"jsonrpc":"2.0","id":"sb-1","error":{"code":1,"message":"no"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2099-01-01"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"loud"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`[]`, `{}`, `[[[[`, `"str"`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	} {
		for _, v := range []string{"", "2025-03-26", "2025-11-25", "2026-07-28"} {
			f.Add(seed, v)
		}
	}
	// Fuzzing, the engine starts goroutines of its own in this process.
	if fl := flag.Lookup("test.fuzz"); fl == nil || fl.Value.String() == "" {
		checkGoroutines(f)
	}
	fx := newFixture(f, nil)
	var (
		id    string
		pings int
	)
	f.Fuzz(func(t *testing.T, body, version string) {
		if !validHeaderValue(version) {
			t.Skip("not a header value an HTTP client sends")
		}
		if id == "" {
			id = initialize(t, fx, nil)
		}
		hdr := map[string]string{protocolVersionHeader: version}
		// The method header a client sends with a lone message.
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal([]byte(body), &msg) == nil && validHeaderValue(msg.Method) {
			hdr[methodHeader] = msg.Method
		}
		// A call that asks the client (roots) waits for an answer for good;
		// the POST's status comes with the question. The wait tool answers
		// within 3s.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := rawSendCtx(ctx, fx, http.MethodPost, id, strings.NewReader(body), hdr)
		if err != nil {
			t.Fatalf("POST %q: %v", body, err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest:
		default:
			t.Fatalf("status %s for %q", resp.Status, body)
		}
		pings++
		ping := "after-" + strconv.Itoa(pings)
		got := events(t, post(t, fx, id, `{"jsonrpc":"2.0","id":"`+ping+`","method":"ping"}`, v25))
		if len(got) != 1 || got[0] != `{"jsonrpc":"2.0","id":"`+ping+`","result":{}}` {
			t.Fatalf("after %q (version %q) the session answered a ping with %q", body, version, got)
		}
	})
}

// validHeaderValue reports whether net/http's client sends v as a header
// value: no control bytes but tab.
func validHeaderValue(v string) bool {
	for i := range len(v) {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}
