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

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// child is the far end of a client's line connection: it reads the lines
// the client writes and writes lines back, as a stdio server would.
type child struct {
	t   *testing.T
	in  *bufio.Reader
	out io.WriteCloser
	wmu sync.Mutex
	cl  *client
}

func newChild(t *testing.T, hooks clientHooks) *child {
	childOut, toConn := io.Pipe()
	fromConn, childIn := io.Pipe()
	c := &child{t: t, in: bufio.NewReader(fromConn), out: toConn}
	c.cl = newClient(newLineConn(childOut, childIn, nil, nil), hooks, hclog.NewNullLogger())
	t.Cleanup(func() {
		toConn.Close()
		fromConn.Close()
		c.cl.close()
	})
	return c
}

// next reads the next message the client wrote.
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

// request reads the next message, which must be a call of method.
func (c *child) request(method string) *jsonrpc.Request {
	c.t.Helper()
	r, ok := c.next().(*jsonrpc.Request)
	if !ok || !r.IsCall() || r.Method != method {
		c.t.Fatalf("want a %s request, got %#v", method, r)
	}
	return r
}

func (c *child) send(lines ...string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := io.WriteString(c.out, strings.Join(lines, "\n")+"\n"); err != nil {
		c.t.Errorf("child write: %v", err)
	}
}

func idJSON(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// recSink records what reaches it, and whether its call had returned.
type recSink struct {
	owner    any
	mu       sync.Mutex
	events   []string
	returned bool
	late     int
	answer   func(method string, params json.RawMessage) (json.RawMessage, error)
}

func (s *recSink) Notify(_ context.Context, method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.returned {
		s.late++
	}
	s.events = append(s.events, method+" "+string(params))
}

func (s *recSink) Request(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	s.mu.Lock()
	s.events = append(s.events, "request "+method)
	s.mu.Unlock()
	if s.answer != nil {
		return s.answer(method, params)
	}
	return json.RawMessage(`{}`), nil
}

func (s *recSink) Owner() any { return s.owner }

func (s *recSink) count(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

type callResult struct {
	raw json.RawMessage
	err error
}

func (c *child) call(ctx context.Context, method string, params mcp.Params, sink Sink) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		var s Sink
		if sink != nil {
			s = sink
		}
		raw, err := c.cl.call(ctx, method, params, s)
		if rs, ok := sink.(*recSink); ok && rs != nil {
			rs.mu.Lock()
			rs.returned = true
			rs.mu.Unlock()
		}
		done <- callResult{raw, err}
	}()
	return done
}

// TestClientCallHandsOnNotificationsFirst: everything the server writes
// about a call before its response reaches the call's sink, in order,
// before the call returns; the progress token upstream is the client's own.
func TestClientCallHandsOnNotificationsFirst(t *testing.T) {
	c := newChild(t, clientHooks{})
	for round := range 20 {
		sink := &recSink{owner: "a"}
		done := c.call(context.Background(), "tools/call", &mcp.CallToolParams{Name: "x", Meta: mcp.Meta{"progressToken": "downstream-token"}}, sink)
		req := c.request("tools/call")
		var p mcp.CallToolParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			t.Fatal(err)
		}
		tok, _ := p.GetProgressToken().(string)
		if !strings.HasPrefix(tok, "sb-") {
			t.Fatalf("upstream progress token %v: want one the client minted", p.GetProgressToken())
		}
		var lines []string
		for i := range 50 {
			lines = append(lines,
				fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%q,"progress":%d}}`, tok, i),
				fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"log %d"}}`, i))
		}
		lines = append(lines, `{"jsonrpc":"2.0","id":`+idJSON(req.ID)+`,"result":{"content":[]}}`)
		c.send(lines...)
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		sink.mu.Lock()
		n, late := len(sink.events), sink.late
		sink.mu.Unlock()
		if n != 100 || late != 0 {
			t.Fatalf("round %d: %d notifications before the response (want 100), %d after", round, n, late)
		}
		for i := range 50 {
			if want := fmt.Sprintf(`"progress":%d`, i); !strings.Contains(sink.events[2*i], want) {
				t.Fatalf("event %d is %s, want progress %d", 2*i, sink.events[2*i], i)
			}
		}
	}
}

// TestClientConcurrentAnswers: answers in any order, in one batch line,
// reach their own calls.
func TestClientConcurrentAnswers(t *testing.T) {
	c := newChild(t, clientHooks{})
	const n = 20
	var dones []<-chan callResult
	for range n {
		dones = append(dones, c.call(context.Background(), "ping", nil, nil))
	}
	var answers []string
	for range n {
		r := c.request("ping")
		answers = append([]string{`{"jsonrpc":"2.0","id":` + idJSON(r.ID) + `,"result":{"id":` + idJSON(r.ID) + `}}`}, answers...)
	}
	c.send("[" + strings.Join(answers, ",") + "]")
	seen := map[string]bool{}
	for _, d := range dones {
		r := <-d
		if r.err != nil {
			t.Fatal(r.err)
		}
		if seen[string(r.raw)] {
			t.Fatalf("answer %s delivered twice", r.raw)
		}
		seen[string(r.raw)] = true
	}
}

// TestClientErrorAnswer: a JSON-RPC error answer is the call's error.
func TestClientErrorAnswer(t *testing.T) {
	c := newChild(t, clientHooks{})
	done := c.call(context.Background(), "tools/call", &mcp.CallToolParams{Name: "x"}, nil)
	r := c.request("tools/call")
	c.send(`{"jsonrpc":"2.0","id":` + idJSON(r.ID) + `,"error":{"code":-32602,"message":"bad"}}`)
	var we *jsonrpc.Error
	if res := <-done; !errors.As(res.err, &we) || we.Code != -32602 || we.Message != "bad" {
		t.Fatalf("got %v, want the server's error", res.err)
	}
}

// TestClientCancel: a cancelled call returns at once and the server is
// told which request was cancelled.
func TestClientCancel(t *testing.T) {
	c := newChild(t, clientHooks{})
	ctx, cancel := context.WithCancel(context.Background())
	done := c.call(ctx, "tools/call", &mcp.CallToolParams{Name: "x"}, nil)
	r := c.request("tools/call")
	cancel()
	if res := <-done; !errors.Is(res.err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", res.err)
	}
	n, ok := c.next().(*jsonrpc.Request)
	if !ok || n.Method != "notifications/cancelled" || !strings.Contains(string(n.Params), `"requestId":`+idJSON(r.ID)) {
		t.Fatalf("want notifications/cancelled for %v, got %#v", r.ID.Raw(), n)
	}
	// A late answer is dropped; the client goes on.
	c.send(`{"jsonrpc":"2.0","id":` + idJSON(r.ID) + `,"result":{}}`)
	done = c.call(context.Background(), "ping", nil, nil)
	p := c.request("ping")
	c.send(`{"jsonrpc":"2.0","id":` + idJSON(p.ID) + `,"result":{}}`)
	if res := <-done; res.err != nil {
		t.Fatal(res.err)
	}
}

// TestClientConnectionEnds: calls in flight fail with ErrConnectionClosed
// when the server's output ends, after what was read about them was handed
// on, and an answer on the last line still wins.
func TestClientConnectionEnds(t *testing.T) {
	c := newChild(t, clientHooks{})
	answered := c.call(context.Background(), "ping", nil, nil)
	a := c.request("ping")
	sink := &recSink{owner: "a"}
	left := c.call(context.Background(), "tools/call", &mcp.CallToolParams{Name: "x", Meta: mcp.Meta{"progressToken": "t"}}, sink)
	var p mcp.CallToolParams
	if err := json.Unmarshal(c.request("tools/call").Params, &p); err != nil {
		t.Fatal(err)
	}
	c.send(`{"jsonrpc":"2.0","id":`+idJSON(a.ID)+`,"result":{}}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%q,"progress":1}}`, p.GetProgressToken()))
	c.out.Close()
	if r := <-answered; r.err != nil {
		t.Errorf("answered call: %v", r.err)
	}
	if r := <-left; !errors.Is(r.err, ErrConnectionClosed) {
		t.Errorf("unanswered call: %v, want ErrConnectionClosed", r.err)
	}
	// What the server wrote about the call before it went still went on.
	if n := sink.count("notifications/progress"); n != 1 {
		t.Errorf("the unanswered call's sink got %d progress notifications, want 1", n)
	}
	if err := c.cl.wait(); err == nil {
		t.Error("wait returned no error after the connection ended")
	}
}

// TestClientLogsReachOneSessionOnly: a log message written while calls of
// one downstream session are in flight reaches one of them; while calls of
// two sessions are, neither (it cannot be told whose it is); outside any
// call it goes to the hook.
func TestClientLogsReachOneSessionOnly(t *testing.T) {
	outside := make(chan string, 1)
	c := newChild(t, clientHooks{notify: func(method string, _ json.RawMessage) { outside <- method }})
	run := func(sinks ...*recSink) {
		var reqs []*jsonrpc.Request
		var dones []<-chan callResult
		for _, s := range sinks {
			dones = append(dones, c.call(context.Background(), "tools/call", &mcp.CallToolParams{Name: "x"}, s))
			reqs = append(reqs, c.request("tools/call"))
		}
		lines := []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}`}
		for _, r := range reqs {
			lines = append(lines, `{"jsonrpc":"2.0","id":`+idJSON(r.ID)+`,"result":{"content":[]}}`)
		}
		c.send(lines...)
		for _, d := range dones {
			if r := <-d; r.err != nil {
				t.Fatal(r.err)
			}
		}
	}
	a1, a2 := &recSink{owner: "A"}, &recSink{owner: "A"}
	run(a1, a2)
	if got := a1.count("notifications/message") + a2.count("notifications/message"); got != 1 {
		t.Errorf("session A got the log %d times, want 1", got)
	}
	a3, b := &recSink{owner: "A"}, &recSink{owner: "B"}
	run(a3, b)
	if got := a3.count("notifications/message") + b.count("notifications/message"); got != 0 {
		t.Errorf("a log written during calls of two sessions reached %d of them, want none", got)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"idle"}}`)
	select {
	case m := <-outside:
		if m != "notifications/message" {
			t.Errorf("hook got %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a log outside any call did not reach the hook")
	}
}

// TestClientServerRequests: sampling during the only call goes to that
// call's sink and its answer back to the server; with two calls in flight
// it goes to the hook; roots/list always goes to the hook.
func TestClientServerRequests(t *testing.T) {
	hooked := make(chan string, 4)
	c := newChild(t, clientHooks{request: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
		hooked <- method
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "no route"}
	}})
	sink := &recSink{owner: "A", answer: func(string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`), nil
	}}
	done := c.call(context.Background(), "tools/call", &mcp.CallToolParams{Name: "x"}, sink)
	call := c.request("tools/call")
	c.send(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`)
	resp, ok := c.next().(*jsonrpc.Response)
	if !ok || resp.ID.Raw() != "s1" || resp.Error != nil || !strings.Contains(string(resp.Result), `"model":"m"`) {
		t.Fatalf("sampling answer: %#v", resp)
	}
	c.send(`{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`)
	if m := <-hooked; m != "roots/list" {
		t.Fatalf("hook got %s", m)
	}
	if resp, ok := c.next().(*jsonrpc.Response); !ok || resp.ID.Raw() != "r1" || resp.Error == nil {
		t.Fatalf("roots answer: %#v", resp)
	}
	other := c.call(context.Background(), "tools/call", &mcp.CallToolParams{Name: "y"}, &recSink{owner: "B"})
	call2 := c.request("tools/call")
	c.send(`{"jsonrpc":"2.0","id":"s2","method":"elicitation/create","params":{"message":"?"}}`)
	if m := <-hooked; m != "elicitation/create" {
		t.Fatalf("with two calls in flight, hook got %s", m)
	}
	c.next() // the hook's refusal
	c.send(`{"jsonrpc":"2.0","id":`+idJSON(call.ID)+`,"result":{}}`, `{"jsonrpc":"2.0","id":`+idJSON(call2.ID)+`,"result":{}}`)
	for _, d := range []<-chan callResult{done, other} {
		if r := <-d; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if sink.count("request sampling/createMessage") != 1 {
		t.Errorf("sink events %v", sink.events)
	}
}

// FuzzClientCall: whatever a server writes while a call is in flight, the
// call ends (answered, or failed when the output ends) and nothing panics.
func FuzzClientCall(f *testing.F) {
	for _, s := range lineSamples {
		f.Add([]byte(s + "\n"))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"sb-1","progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"notifications/message","params":{}}]` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"sampling/createMessage","params":{}}` + "\nnot json\n" + `{"jsonrpc":"2.0","id":1}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		childOut, toConn := io.Pipe()
		cl := newClient(newLineConn(childOut, discardCloser{}, nil, nil), clientHooks{}, hclog.NewNullLogger())
		defer cl.close()
		errc := make(chan error, 1)
		go func() {
			_, err := cl.call(context.Background(), "tools/call", &mcp.CallToolParams{Name: "x", Meta: mcp.Meta{"progressToken": 1}}, &recSink{owner: 1})
			errc <- err
		}()
		go func() {
			toConn.Write(out)
			toConn.Close()
		}()
		select {
		case err := <-errc:
			var we *jsonrpc.Error
			if err != nil && !errors.As(err, &we) && !errors.Is(err, ErrConnectionClosed) {
				t.Fatalf("call ended with %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("call still waiting after the output ended")
		}
	})
}

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }
