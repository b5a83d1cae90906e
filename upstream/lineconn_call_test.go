package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// child is the far end of a lineConn: it reads the connection's lines and
// writes lines back, as a stdio server would.
type child struct {
	t     *testing.T
	in    *bufio.Reader
	out   io.WriteCloser
	wmu   sync.Mutex
	conn  *lineConn
	close func()
}

func newChild(t *testing.T) *child {
	childOut, toConn := io.Pipe()
	fromConn, childIn := io.Pipe()
	c := &child{t: t, in: bufio.NewReader(fromConn), out: toConn}
	c.conn = newLineConn(childOut, childIn, nil, nil)
	c.close = func() { toConn.Close(); fromConn.Close() }
	t.Cleanup(func() { c.conn.Close(); c.close() })
	return c
}

// next reads the next message the connection wrote.
func (c *child) next() jsonrpc.Message {
	c.t.Helper()
	line, err := c.in.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("child read: %v", err)
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.t.Fatalf("child got %q: %v", line, err)
	}
	return msg
}

func (c *child) send(line string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := io.WriteString(c.out, line+"\n"); err != nil {
		c.t.Errorf("child write: %v", err)
	}
}

func idJSON(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// TestLineConnCall: a call's request is one JSON-RPC line with a string ID
// of its own; its response goes to the call and never to the SDK's Read,
// while a notification sent before it does reach Read.
func TestLineConnCall(t *testing.T) {
	c := newChild(t)
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.conn.callTool(context.Background(), &mcp.CallToolParams{
			Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), Meta: mcp.Meta{"progressToken": "p1"}})
		done <- result{res, err}
	}()
	req, ok := c.next().(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.IsCall() {
		t.Fatalf("request: %#v", req)
	}
	if id, ok := req.ID.Raw().(string); !ok || !strings.HasPrefix(id, rawIDPrefix) {
		t.Fatalf("request ID %#v: want a string starting %q", req.ID.Raw(), rawIDPrefix)
	}
	if got, want := string(req.Params), `{"_meta":{"progressToken":"p1"},"name":"echo","arguments":{"text":"hi"}}`; got != want {
		t.Fatalf("params %s, want %s", got, want)
	}
	// One write: the pipe blocks a second write until the session reads.
	c.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":` + idJSON(req.ID) + `,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`)

	m, err := c.conn.Read(context.Background())
	if n, ok := m.(*jsonrpc.Request); err != nil || !ok || n.Method != "notifications/progress" {
		t.Fatalf("Read: %#v, %v", m, err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.res.Content) != 1 || r.res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("result: %#v", r.res)
	}
	// The response did not reach the SDK's side.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if m, err := c.conn.Read(ctx); err == nil {
		t.Errorf("Read got %#v after the call's own response", m)
	}
}

// TestLineConnCallConcurrent: answers in any order reach their own calls,
// also when they come in one batch line with a message for the session.
func TestLineConnCallConcurrent(t *testing.T) {
	c := newChild(t)
	const n = 20
	errs := make(chan error, n)
	for i := range n {
		go func() {
			raw, err := c.conn.call(context.Background(), "tools/call", map[string]any{"i": i})
			if err == nil && string(raw) != fmt.Sprintf(`{"i":%d}`, i) {
				err = fmt.Errorf("call %d got %s", i, raw)
			}
			errs <- err
		}()
	}
	var answers []string
	for range n {
		req := c.next().(*jsonrpc.Request)
		answers = append(answers, `{"jsonrpc":"2.0","id":`+idJSON(req.ID)+`,"result":`+string(req.Params)+`}`)
	}
	// Reverse order; the last two in a batch with a session message.
	for i := n - 1; i >= 2; i-- {
		c.send(answers[i])
	}
	c.send(`[` + answers[1] + `,{"jsonrpc":"2.0","method":"notifications/tools/list_changed"},` + answers[0] + `]`)
	// The session takes the batch's notification before the two answers
	// are handed on.
	m, err := c.conn.Read(context.Background())
	if r, ok := m.(*jsonrpc.Request); err != nil || !ok || r.Method != "notifications/tools/list_changed" {
		t.Errorf("Read: %#v, %v", m, err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestLineConnCallError: a JSON-RPC error answer comes back as the
// *jsonrpc.Error, as from the SDK's session.
func TestLineConnCallError(t *testing.T) {
	c := newChild(t)
	go func() {
		req := c.next().(*jsonrpc.Request)
		c.send(`{"jsonrpc":"2.0","id":` + idJSON(req.ID) + `,"error":{"code":-32602,"message":"no such tool"}}`)
	}()
	_, err := c.conn.callTool(context.Background(), &mcp.CallToolParams{Name: "nope"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != "no such tool" {
		t.Fatalf("error: %v", err)
	}
}

// TestLineConnCallCancel: a cancelled call returns at once and the child
// hears notifications/cancelled for its ID; the late answer is dropped.
func TestLineConnCallCancel(t *testing.T) {
	c := newChild(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.conn.call(ctx, "tools/call", map[string]any{})
		errc <- err
	}()
	req := c.next().(*jsonrpc.Request)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	n := c.next().(*jsonrpc.Request)
	var p mcp.CancelledParams
	if err := json.Unmarshal(n.Params, &p); err != nil || n.Method != "notifications/cancelled" || p.RequestID != req.ID.Raw() {
		t.Fatalf("cancel notification %s %s: %v", n.Method, n.Params, err)
	}
	c.send(`{"jsonrpc":"2.0","id":` + idJSON(req.ID) + `,"result":{}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`)
	m, err := c.conn.Read(context.Background())
	if r, ok := m.(*jsonrpc.Request); err != nil || !ok || r.Method != "notifications/resources/list_changed" {
		t.Errorf("Read after the late answer: %#v, %v", m, err)
	}
	c.conn.pmu.Lock()
	left := len(c.conn.pending)
	c.conn.pmu.Unlock()
	if left != 0 {
		t.Errorf("%d calls still pending", left)
	}
}

// TestLineConnCallConnectionEnds: a call in flight when stdout ends, and a
// call after Close, fail with mcp.ErrConnectionClosed, which the Handle
// reads as a lost connection.
func TestLineConnCallConnectionEnds(t *testing.T) {
	c := newChild(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.conn.call(context.Background(), "tools/call", map[string]any{})
		errc <- err
	}()
	c.next()
	c.out.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Errorf("call when stdout ended: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call still waiting after stdout ended")
	}
	c.conn.Close()
	if _, err := c.conn.call(context.Background(), "tools/call", map[string]any{}); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("call after Close: %v", err)
	}
}

// TestLineConnCallAfterNotifications: a call returns only once the session
// handled the progress and log notifications that came before its response
// (the proxy sends them on the call's own downstream stream). A notification
// the session never handles delays one call by at most orderWait.
func TestLineConnCallAfterNotifications(t *testing.T) {
	c := newChild(t)
	call := func() <-chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := c.conn.call(context.Background(), "tools/call", map[string]any{})
			errc <- err
		}()
		return errc
	}

	errc := call()
	req := c.next().(*jsonrpc.Request)
	c.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\n" +
		`{"jsonrpc":"2.0","id":` + idJSON(req.ID) + `,"result":{}}`)
	if _, err := c.conn.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatalf("call returned (%v) before its log message was handled", err)
	case <-time.After(orderWait / 4):
	}
	c.conn.noteHandled()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	// Never handled: the next call waits about orderWait, the one after
	// that not at all.
	errc = call()
	req = c.next().(*jsonrpc.Request)
	c.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":` + idJSON(req.ID) + `,"result":{}}`)
	if _, err := c.conn.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < orderWait/2 {
		t.Errorf("call returned after %v, before its notification was handled or orderWait passed", waited)
	}
	errc = call()
	req = c.next().(*jsonrpc.Request)
	c.send(`{"jsonrpc":"2.0","id":` + idJSON(req.ID) + `,"result":{}}`)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(orderWait / 2):
		t.Fatal("a later call still waits for the notification that was never handled")
	}
}

func TestSplit(t *testing.T) {
	mk := func(id any, method string) jsonrpc.Message {
		mid, _ := jsonrpc.MakeID(id)
		if method != "" {
			return &jsonrpc.Request{ID: mid, Method: method}
		}
		return &jsonrpc.Response{ID: mid}
	}
	note, other, mine1, mine2 := mk(nil, "notifications/progress"), mk(float64(3), ""), mk("sb-1", ""), mk("sb-2", "")
	for _, tc := range []struct {
		in         []jsonrpc.Message
		rest, mine int
	}{
		{[]jsonrpc.Message{note}, 1, 0},
		{[]jsonrpc.Message{other, note}, 2, 0},
		{[]jsonrpc.Message{mine1}, 0, 1},
		{[]jsonrpc.Message{note, mine1, other, mine2}, 2, 2},
		{[]jsonrpc.Message{mine1, note}, 1, 1},
		{[]jsonrpc.Message{mk("other-1", "")}, 1, 0},
	} {
		c := &lineConn{}
		rest, mine := c.split(tc.in)
		if len(rest) != tc.rest || len(mine) != tc.mine {
			t.Errorf("%d messages: %d rest, %d mine; want %d, %d", len(tc.in), len(rest), len(mine), tc.rest, tc.mine)
		}
		for _, m := range rest {
			if rawResponse(m) != nil {
				t.Errorf("a response of call's left in rest")
			}
		}
	}
}

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }

// FuzzLineConnCall: whatever a child writes while a call is in flight, the
// call ends (answered, or failed when stdout ends), the session never sees
// an answer meant for a call, and nothing panics.
func FuzzLineConnCall(f *testing.F) {
	for _, s := range lineSamples {
		f.Add([]byte(s + "\n"))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":"sb-1","result":{"content":[]}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":"sb-1","error":{"code":-1,"message":"x"}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"sb-1","result":{}},{"jsonrpc":"2.0","method":"notifications/message","params":{}}]` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"sb-2","result":{}}` + "\nnot json\n" + `{"jsonrpc":"2.0","id":"sb-1"}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		childOut, toConn := io.Pipe()
		c := newLineConn(childOut, discardCloser{}, nil, nil)
		defer c.Close()
		errc := make(chan error, 1)
		go func() {
			_, err := c.call(context.Background(), "tools/call", map[string]any{})
			errc <- err
		}()
		// The call's request is written before anything is read back.
		for {
			c.pmu.Lock()
			n := len(c.pending)
			c.pmu.Unlock()
			if n == 1 {
				break
			}
			select {
			case err := <-errc:
				t.Fatalf("call ended before any answer: %v", err)
			default:
				time.Sleep(time.Millisecond)
			}
		}
		go func() {
			toConn.Write(out)
			toConn.Close()
		}()
		for {
			m, err := c.Read(context.Background())
			if err != nil {
				break
			}
			if rawResponse(m) != nil {
				t.Fatalf("the session got an answer meant for a call: %#v", m)
			}
			if r, ok := m.(*jsonrpc.Request); ok && !r.IsCall() && callNotification(r.Method) {
				c.noteHandled() // as the session's middleware does
			}
		}
		select {
		case err := <-errc:
			var we *jsonrpc.Error
			if err != nil && !errors.As(err, &we) && !errors.Is(err, mcp.ErrConnectionClosed) {
				t.Fatalf("call ended with %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("call still waiting after stdout ended")
		}
	})
}
