package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/stdio"
	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

// wait bounds every wait for something another goroutine does; only a
// failing test waits that long.
const wait = 10 * time.Second

// chatter is how many notifications the chatty method sends before its
// answer.
const chatter = 50

// harness is Serve on two pipes: the test writes the client's lines to in
// and reads the server's from lines.
type harness struct {
	ss     *session.Session
	in     *io.PipeWriter
	lines  chan string // closed when the output ends
	cancel context.CancelFunc

	result chan error // Serve's result, once
	once   sync.Once
	err    error
	waited atomic.Bool // the test looked at Serve's result
}

// serve starts Serve for a test with a session answering methods. When the
// test ends, the input ends, the session closes and goroutines are checked.
func serve(t *testing.T, methods session.Methods) *harness {
	t.Helper()
	checkGoroutines(t)
	log := testLogger(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{
		ss:     session.New(session.Options{Methods: methods, Logger: log.Named("session")}, nil),
		in:     inW,
		lines:  make(chan string, 4096),
		cancel: cancel,
		result: make(chan error, 1),
	}
	go func() { h.result <- stdio.Serve(ctx, h.ss, inR, outW, log) }()
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		waited := h.waited.Load()
		if err := h.wait(t); !waited && err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
		h.ss.Close()
		outW.Close()
	})
	return h
}

// wait is Serve's result, waiting for it at most wait.
func (h *harness) wait(t *testing.T) error {
	t.Helper()
	return h.waitWithin(t, wait)
}

// waitWithin is Serve's result, waiting for it at most d.
func (h *harness) waitWithin(t *testing.T, d time.Duration) error {
	t.Helper()
	h.waited.Store(true)
	h.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		select {
		case h.err = <-h.result:
		case <-ctx.Done():
			h.err = errors.New("Serve did not return")
		}
	})
	return h.err
}

// send writes lines to the server, each with its newline.
func (h *harness) send(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(h.in, l+"\n"); err != nil {
			t.Fatalf("write %q: %v", l, err)
		}
	}
}

// next is the next line the server wrote.
func (h *harness) next(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatal("output ended")
		}
		return l
	case <-ctx.Done():
		t.Fatalf("no line within %v", wait)
		return ""
	}
}

// message is the next line, one message.
func (h *harness) message(t *testing.T) jsonrpc.Message {
	t.Helper()
	l := h.next(t)
	m, err := jsonrpc.DecodeMessage([]byte(l))
	if err != nil {
		t.Fatalf("line %q: %v", l, err)
	}
	return m
}

// answer is the next line, the answer to the request with the given ID.
func (h *harness) answer(t *testing.T, id any) *jsonrpc.Response {
	t.Helper()
	m := h.message(t)
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("got %+v, want the answer to %v", m, id)
	}
	if r.ID != mustID(id) {
		t.Fatalf("answer to %v, want to %v", r.ID.Raw(), id)
	}
	return r
}

// nullIDError checks that line is an error answer with "id":null and the
// code.
func nullIDError(t *testing.T, line string, code int64, substr string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	if id, ok := m["id"]; !ok || string(id) != "null" {
		t.Fatalf("line %q, want \"id\":null", line)
	}
	var e *jsonrpc.Error
	if string(m["jsonrpc"]) != `"2.0"` || json.Unmarshal(m["error"], &e) != nil || e == nil || e.Code != code || !strings.Contains(e.Message, substr) {
		t.Fatalf("line %q, want a JSON-RPC error %d containing %q", line, code, substr)
	}
	if len(m) != 3 {
		t.Fatalf("line %q, want jsonrpc, id and error only", line)
	}
}

func mustID(v any) jsonrpc.ID {
	if n, ok := v.(int); ok {
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}

func initLine(id any, version string) string {
	idJSON, _ := json.Marshal(id)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":%q,"clientInfo":{"name":"c","version":"1"},"capabilities":{}}}`, idJSON, version)
}

// initialize runs the initialize handshake at version.
func (h *harness) initialize(t *testing.T, version string) {
	t.Helper()
	h.send(t, initLine("init", version))
	if r := h.answer(t, "init"); r.Error != nil {
		t.Fatalf("initialize: %v", r.Error)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if v := h.ss.ProtocolVersion(); v != version {
		t.Fatalf("negotiated %q, want %q", v, version)
	}
}

// ping checks the session still answers, and that the ping's answer is
// the next line.
func (h *harness) ping(t *testing.T, id string) {
	t.Helper()
	h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"ping"}`, id))
	if got, want := h.next(t), fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{}}`, id); got != want {
		t.Fatalf("after the lines before, got %s, want the ping's answer %s", got, want)
	}
}

func chatty(ctx context.Context, r *session.Request) (any, error) {
	var p struct {
		N int `json:"n"`
	}
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	for i := range chatter {
		if err := r.Notify(ctx, "notifications/progress", map[string]int{"progressToken": p.N, "progress": i}); err != nil {
			return nil, err
		}
	}
	return map[string]int{"n": p.N}, nil
}

func TestParseError(t *testing.T) {
	h := serve(t, nil)
	for i, line := range []string{
		"this is not json",
		`{"jsonrpc":"2.0","id":1,`,
		"\xff\xfe{}",
		`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`,
	} {
		t.Run(fmt.Sprintf("%q", line), func(t *testing.T) {
			h.send(t, line)
			nullIDError(t, h.next(t), jsonrpc.CodeParseError, "parse error")
			h.ping(t, fmt.Sprint("after-", i))
		})
	}
}

func TestInvalidRequest(t *testing.T) {
	h := serve(t, nil)
	for i, line := range []string{
		`{"hello":"world"}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`42`,
		`"ping"`,
		`[]`,
		`[1,2]`,
	} {
		t.Run(line, func(t *testing.T) {
			h.send(t, line)
			nullIDError(t, h.next(t), jsonrpc.CodeInvalidRequest, "invalid request")
			h.ping(t, fmt.Sprint("after-", i))
		})
	}
}

func TestBlankLinesIgnored(t *testing.T) {
	h := serve(t, nil)
	h.send(t, "", "   ", "\t", "\r")
	h.ping(t, "after")
}

// TestBatchBeforeJune2025: before 2025-06-18 a batch is answered with one
// batch, in request order, even when a later request finishes first.
func TestBatchBeforeJune2025(t *testing.T) {
	for _, version := range []string{"", "2024-11-05", "2025-03-26"} {
		t.Run("version "+version, func(t *testing.T) {
			released := make(chan struct{})
			h := serve(t, session.Methods{
				"slow": func(ctx context.Context, r *session.Request) (any, error) {
					select {
					case <-released:
						return "slow", nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				},
				"fast": func(context.Context, *session.Request) (any, error) {
					close(released)
					return "fast", nil
				},
			})
			if version != "" {
				h.initialize(t, version)
			}
			// Before initialize only ping is answered; the answers are errors
			// then, in the same order.
			h.send(t, `[{"jsonrpc":"2.0","id":1,"method":"slow"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"fast"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
			if version == "" {
				close(released)
			}
			line := h.next(t)
			var batch []json.RawMessage
			if err := json.Unmarshal([]byte(line), &batch); err != nil {
				t.Fatalf("line %q: want one batch: %v", line, err)
			}
			wantIDs := []any{int64(1), "b", int64(3)}
			if len(batch) != len(wantIDs) {
				t.Fatalf("batch of %d answers, want %d: %s", len(batch), len(wantIDs), line)
			}
			for i, raw := range batch {
				m, err := jsonrpc.DecodeMessage(raw)
				if err != nil {
					t.Fatalf("answer %d %s: %v", i, raw, err)
				}
				r, ok := m.(*jsonrpc.Response)
				if !ok || r.ID.Raw() != wantIDs[i] {
					t.Fatalf("answer %d is %s, want the answer to %v", i, raw, wantIDs[i])
				}
				if version != "" && r.Error != nil {
					t.Fatalf("answer %d: %v", i, r.Error)
				}
			}
			h.ping(t, "after")
		})
	}
}

func TestBatchOfNotificationsUnanswered(t *testing.T) {
	h := serve(t, nil)
	h.initialize(t, "2025-03-26")
	h.send(t, `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}]`)
	h.ping(t, "after")
}

func TestBatchDuplicateID(t *testing.T) {
	var calls atomic.Int32
	h := serve(t, session.Methods{"count": func(context.Context, *session.Request) (any, error) {
		calls.Add(1)
		return nil, nil
	}})
	h.initialize(t, "2025-03-26")
	h.send(t, `[{"jsonrpc":"2.0","id":1,"method":"count"},{"jsonrpc":"2.0","id":1,"method":"count"}]`)
	nullIDError(t, h.next(t), jsonrpc.CodeInvalidRequest, "twice")
	h.ping(t, "after")
	h.ss.Close() // waits for any request that ran
	if n := calls.Load(); n != 0 {
		t.Fatalf("a refused batch ran %d requests", n)
	}
}

func TestBatchRefusedFromJune2025(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			var calls atomic.Int32
			h := serve(t, session.Methods{"count": func(context.Context, *session.Request) (any, error) {
				calls.Add(1)
				return nil, nil
			}})
			h.initialize(t, version)
			h.send(t, `[{"jsonrpc":"2.0","id":1,"method":"count"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
			nullIDError(t, h.next(t), jsonrpc.CodeInvalidRequest, "batches are not supported")
			h.ping(t, "after")
			h.ss.Close() // waits for any request that ran
			if n := calls.Load(); n != 0 {
				t.Fatalf("a refused batch ran %d requests", n)
			}
		})
	}
}

func TestEOFReturnsNil(t *testing.T) {
	h := serve(t, nil)
	h.ping(t, "p")
	h.in.Close()
	if err := h.wait(t); err != nil {
		t.Fatalf("Serve at EOF = %v, want nil", err)
	}
}

// TestEOFAfterUnterminatedLine: a last line without its newline is still
// served.
func TestEOFAfterUnterminatedLine(t *testing.T) {
	h := serve(t, nil)
	if _, err := io.WriteString(h.in, `{"jsonrpc":"2.0","id":"last","method":"ping"}`); err != nil {
		t.Fatal(err)
	}
	h.in.Close()
	if err := h.wait(t); err != nil {
		t.Fatalf("Serve at EOF = %v, want nil", err)
	}
	h.answer(t, "last")
}

func TestCancelReturnsCtxErr(t *testing.T) {
	h := serve(t, nil)
	h.ping(t, "p")
	h.cancel()
	if err := h.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve after cancel = %v, want Canceled", err)
	}
}

func TestReadError(t *testing.T) {
	h := serve(t, nil)
	boom := errors.New("boom")
	h.in.CloseWithError(boom)
	if err := h.wait(t); !errors.Is(err, boom) || !strings.Contains(err.Error(), "stdin") {
		t.Fatalf("Serve after a read error = %v, want it wrapped", err)
	}
}

func TestLineTooLong(t *testing.T) {
	h := serve(t, nil)
	go func() {
		// The server stops reading in the middle: the write ends when the
		// test closes the pipe. The line is one byte over the limit.
		head, tail := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`, "\"}}"
		_, _ = io.WriteString(h.in, head+strings.Repeat("x", wire.MaxLine+1-len(head)-len(tail))+tail+"\n")
	}()
	// Reading 16 MiB under -race on a busy machine takes seconds.
	if err := h.waitWithin(t, time.Minute); !errors.Is(err, wire.ErrLineTooLong) {
		t.Fatalf("Serve on a line over wire.MaxLine = %v, want ErrLineTooLong", err)
	}
}

// TestNotificationsPrecedeAnswer: many calls at once, each sending chatter
// notifications before its answer; each call's notifications all arrive, in
// order, before its answer.
func TestNotificationsPrecedeAnswer(t *testing.T) {
	h := serve(t, session.Methods{"chatty": chatty})
	h.initialize(t, "2025-11-25")
	const calls = 20
	for n := range calls {
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"chatty","params":{"n":%d}}`, 100+n, n))
	}
	progress := map[int]int{} // call → notifications seen
	for answered := 0; answered < calls; {
		switch m := h.message(t).(type) {
		case *jsonrpc.Request:
			var p struct {
				Token    int `json:"progressToken"`
				Progress int `json:"progress"`
			}
			if m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil {
				t.Fatalf("unexpected %s %s", m.Method, m.Params)
			}
			if p.Progress != progress[p.Token] {
				t.Fatalf("call %d: progress %d, want %d", p.Token, p.Progress, progress[p.Token])
			}
			progress[p.Token]++
		case *jsonrpc.Response:
			var res struct {
				N int `json:"n"`
			}
			if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
				t.Fatalf("answer %v: %s %v", m.ID.Raw(), m.Result, m.Error)
			}
			if m.ID.Raw() != int64(100+res.N) {
				t.Fatalf("answer %v carries call %d", m.ID.Raw(), res.N)
			}
			if got := progress[res.N]; got != chatter {
				t.Fatalf("call %d answered after %d notifications, want %d", res.N, got, chatter)
			}
			progress[res.N] = -1 << 20 // no more may come
			answered++
		}
	}
}

// TestCallsRunConcurrently: the first call waits until the second one
// runs; both are answered only if calls overlap.
func TestCallsRunConcurrently(t *testing.T) {
	secondRan := make(chan struct{})
	h := serve(t, session.Methods{
		"first": func(ctx context.Context, r *session.Request) (any, error) {
			select {
			case <-secondRan:
				return "first", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"second": func(context.Context, *session.Request) (any, error) {
			close(secondRan)
			return "second", nil
		},
	})
	h.initialize(t, "2025-11-25")
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"first"}`, `{"jsonrpc":"2.0","id":2,"method":"second"}`)
	got := map[any]string{}
	for range 2 {
		r := h.message(t).(*jsonrpc.Response)
		var s string
		if r.Error != nil || json.Unmarshal(r.Result, &s) != nil {
			t.Fatalf("answer %v: %s %v", r.ID.Raw(), r.Result, r.Error)
		}
		got[r.ID.Raw()] = s
	}
	if got[int64(1)] != "first" || got[int64(2)] != "second" {
		t.Fatalf("answers %v", got)
	}
}

// TestCancelledLine: a notifications/cancelled line cancels the call the
// line before started.
func TestCancelledLine(t *testing.T) {
	h := serve(t, session.Methods{"wait": func(ctx context.Context, r *session.Request) (any, error) {
		<-ctx.Done()
		return nil, &jsonrpc.Error{Code: 1, Message: "cancelled"}
	}})
	h.initialize(t, "2025-11-25")
	h.send(t, `{"jsonrpc":"2.0","id":"w","method":"wait"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}`)
	if r := h.answer(t, "w"); r.Error == nil || !strings.Contains(r.Error.Error(), "cancelled") {
		t.Fatalf("cancelled call answered %s %v", r.Result, r.Error)
	}
}

// TestSessionStream: the session's own stream is the output, and the
// client's answers to the session's requests are read from the input.
func TestSessionStream(t *testing.T) {
	h := serve(t, nil)
	h.initialize(t, "2025-11-25")
	if err := h.ss.Notify(context.Background(), "notifications/tools/list_changed", nil); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	if got, want := h.next(t), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	type answer struct {
		raw json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		raw, err := h.ss.Ask(context.Background(), "roots/list", nil)
		done <- answer{raw, err}
	}()
	ask, ok := h.message(t).(*jsonrpc.Request)
	if !ok || ask.Method != "roots/list" || !ask.IsCall() {
		t.Fatalf("got %+v, want roots/list", ask)
	}
	idJSON, _ := json.Marshal(ask.ID.Raw())
	h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[{"uri":"file:///x"}]}}`, idJSON))
	if a := <-done; a.err != nil || string(a.raw) != `{"roots":[{"uri":"file:///x"}]}` {
		t.Fatalf("Ask = %s, %v", a.raw, a.err)
	}
}

// TestLogLevelOverStdio: the client's level filters the session's log
// messages on the output.
func TestLogLevelOverStdio(t *testing.T) {
	h := serve(t, nil)
	h.initialize(t, "2025-11-25")
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"warning"}}`)
	h.answer(t, 1)
	for _, l := range []mcp.LoggingLevel{"info", "error"} {
		if err := h.ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: l, Data: string(l)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.next(t); !strings.Contains(got, `"level":"error"`) {
		t.Fatalf("got %s, want only the error message", got)
	}
	h.ping(t, "after")
}

// testLogger sends a test's log lines to t.Log.
func testLogger(t *testing.T) hclog.Logger { return testutil.Logger(t, "stdio") }

// checkGoroutines fails the test if it leaves goroutines behind.
func checkGoroutines(tb testing.TB) {
	tb.Helper()
	testutil.CheckGoroutines(tb, wait)
}
