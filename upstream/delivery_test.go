package upstream

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestClientStrayAnswers: answers to no call in flight are dropped; a late
// answer to a cancelled call is expected and not counted, while an ID never
// sent (a string, a number out of range) and a second answer are counted,
// and named by one WARN, not one per answer (issue 39).
func TestClientStrayAnswers(t *testing.T) {
	var logs lockedBuf
	stray := &strayAnswers{log: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})}
	c := newChild(t, clientHooks{stray: stray})

	ctx, cancel := context.WithCancel(context.Background())
	done := c.call(ctx, "tools/call", &mcp.CallToolParams{Name: "x"}, nil)
	cancelled := c.request("tools/call")
	cancel()
	if res := <-done; !errors.Is(res.err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", res.err)
	}
	if n, ok := c.next().(*jsonrpc.Request); !ok || n.Method != "notifications/cancelled" {
		t.Fatalf("want notifications/cancelled, got %#v", n)
	}
	late := `{"jsonrpc":"2.0","id":` + idJSON(cancelled.ID) + `,"result":{}}`

	done = c.call(context.Background(), "ping", nil, nil)
	p := c.request("ping")
	c.send(late, // expected once: the call was given up on
		`{"jsonrpc":"2.0","id":"`+strings.Trim(idJSON(p.ID), `"`)+`","result":{}}`, // the ID as a string: never sent
		`{"jsonrpc":"2.0","id":987654,"result":{}}`,
		late, // a second answer to the cancelled call
		`{"jsonrpc":"2.0","id":`+idJSON(p.ID)+`,"result":{}}`,
		`{"jsonrpc":"2.0","id":`+idJSON(p.ID)+`,"result":{}}`) // answered twice
	if res := <-done; res.err != nil {
		t.Fatal(res.err)
	}
	// What the read loop took after the ping's answer is counted by the
	// time a further call is answered.
	done = c.call(context.Background(), "ping", nil, nil)
	q := c.request("ping")
	c.send(`{"jsonrpc":"2.0","id":` + idJSON(q.ID) + `,"result":{}}`)
	if res := <-done; res.err != nil {
		t.Fatal(res.err)
	}
	if got := stray.count(); got != 4 {
		t.Errorf("%d stray answers counted, want 4 (a string ID, an ID never sent, two second answers)", got)
	}
	if n := strings.Count(logs.String(), "[WARN]"); n != 1 || !strings.Contains(logs.String(), "count=1") {
		t.Errorf("%d WARN lines, want 1 with count=1:\n%s", n, logs.String())
	}
}
