package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// wait bounds every wait for something another goroutine does; only a
// failing test waits that long.
const wait = 10 * time.Second

// recorder is a Stream that keeps every message written to it, in order,
// and hands each to next.
type recorder struct {
	mu   sync.Mutex
	msgs []jsonrpc.Message
	ch   chan jsonrpc.Message
}

var _ session.Stream = (*recorder)(nil)

func newRecorder() *recorder { return &recorder{ch: make(chan jsonrpc.Message, 4096)} }

func (r *recorder) Write(_ context.Context, msg jsonrpc.Message) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
	r.ch <- msg
	return nil
}

// messages is a copy of what was written so far.
func (r *recorder) messages() []jsonrpc.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// next is the next message written, waiting for it at most wait.
func (r *recorder) next(t *testing.T) jsonrpc.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case m := <-r.ch:
		return m
	case <-ctx.Done():
		t.Fatalf("no message within %v; written so far: %s", wait, dump(r.messages()))
		return nil
	}
}

func dump(msgs []jsonrpc.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		data, _ := jsonrpc.EncodeMessage(m)
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// newSession returns a session closed when the test ends.
func newSession(t *testing.T, opt session.Options, out session.Stream) *session.Session {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = testLogger(t)
	}
	s := session.New(opt, out)
	t.Cleanup(s.Close)
	return s
}

func makeID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	if n, ok := v.(int); ok {
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatalf("MakeID(%v): %v", v, err)
	}
	return id
}

// mustID is makeID for goroutines other than the test's.
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

func call(t *testing.T, id any, method string, params any) *jsonrpc.Request {
	t.Helper()
	return &jsonrpc.Request{ID: makeID(t, id), Method: method, Params: marshal(t, params)}
}

func notification(t *testing.T, method string, params any) *jsonrpc.Request {
	t.Helper()
	return &jsonrpc.Request{Method: method, Params: marshal(t, params)}
}

func marshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	if v == nil {
		return nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// handle hands req to s with Handle and returns the one message it wrote:
// the answer.
func handle(t *testing.T, s *session.Session, req *jsonrpc.Request) *jsonrpc.Response {
	t.Helper()
	out := newRecorder()
	s.Handle(context.Background(), req, out)
	msgs := out.messages()
	if len(msgs) != 1 {
		t.Fatalf("%s: %d messages written, want the answer only:\n%s", req.Method, len(msgs), dump(msgs))
	}
	return response(t, msgs[0], req.ID)
}

// response is m as the answer to the request with the given ID.
func response(t *testing.T, m jsonrpc.Message, id jsonrpc.ID) *jsonrpc.Response {
	t.Helper()
	r, ok := m.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("got %s, want the answer to %v", dump([]jsonrpc.Message{m}), id.Raw())
	}
	if r.ID != id {
		t.Fatalf("answer has ID %v, want %v", r.ID.Raw(), id.Raw())
	}
	return r
}

// wantError checks that r is an error answer with the code and a message
// containing substr.
func wantError(t *testing.T, r *jsonrpc.Response, code int64, substr string) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(r.Error, &we) {
		t.Fatalf("answer %v: result %s, want error %d", r.ID.Raw(), r.Result, code)
	}
	if we.Code != code || !strings.Contains(we.Message, substr) {
		t.Fatalf("answer %v: error %d %q, want %d containing %q", r.ID.Raw(), we.Code, we.Message, code, substr)
	}
}

// decode checks that r is a result and decodes it into a T.
func decode[T any](t *testing.T, r *jsonrpc.Response) T {
	t.Helper()
	var v T
	if r.Error != nil {
		t.Fatalf("answer %v: error %v, want a result", r.ID.Raw(), r.Error)
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("answer %v: result %s: %v", r.ID.Raw(), r.Result, err)
	}
	return v
}

// initialize runs the initialize handshake at version.
func initialize(t *testing.T, s *session.Session, version string) *mcp.InitializeResult {
	t.Helper()
	params := fmt.Sprintf(`{"protocolVersion":%q,"clientInfo":{"name":"client","version":"1"},"capabilities":{"roots":{"listChanged":true}}}`, version)
	res := decode[*mcp.InitializeResult](t, handle(t, s, call(t, "init", "initialize", json.RawMessage(params))))
	s.Handle(context.Background(), notification(t, "notifications/initialized", nil), nil)
	return res
}

// blocker is a Handler that reports each call on started, then answers
// once its ID is released, or with ctx's error once ctx is done.
type blocker struct {
	started chan jsonrpc.ID
	mu      sync.Mutex
	release map[jsonrpc.ID]chan struct{}
	calls   atomic.Int32
}

func newBlocker() *blocker {
	return &blocker{started: make(chan jsonrpc.ID, 64), release: map[jsonrpc.ID]chan struct{}{}}
}

func (b *blocker) gate(id jsonrpc.ID) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := b.release[id]
	if ch == nil {
		ch = make(chan struct{})
		b.release[id] = ch
	}
	return ch
}

// Release lets the call with the given ID answer.
func (b *blocker) Release(id jsonrpc.ID) { close(b.gate(id)) }

func (b *blocker) handle(ctx context.Context, r *session.Request) (any, error) {
	b.calls.Add(1)
	b.started <- r.ID
	select {
	case <-b.gate(r.ID):
		return map[string]any{"released": r.ID.Raw()}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitStarted waits until the call with the given ID runs.
func (b *blocker) waitStarted(t *testing.T, want jsonrpc.ID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case id := <-b.started:
		if id != want {
			t.Fatalf("call %v started, want %v", id.Raw(), want.Raw())
		}
	case <-ctx.Done():
		t.Fatalf("call %v did not start within %v", want.Raw(), wait)
	}
}

func TestInitializeNegotiatesVersion(t *testing.T) {
	tests := []struct {
		name, asked, want string
	}{
		{name: "unknown version gets the newest", asked: "2099-01-01", want: session.Versions[0]},
		{name: "no version gets the newest", asked: "", want: session.Versions[0]},
	}
	for _, v := range session.Versions {
		tests = append(tests, struct{ name, asked, want string }{name: "supported " + v, asked: v, want: v})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, session.Options{Instructions: "be nice"}, nil)
			if s.Initialized() || s.ProtocolVersion() != "" || s.ClientInfo() != nil || s.ClientCapabilities() != nil {
				t.Fatal("a new session already has initialize state")
			}
			res := initialize(t, s, tt.asked)
			if res.ProtocolVersion != tt.want {
				t.Errorf("answered version %q, want %q", res.ProtocolVersion, tt.want)
			}
			if got := s.ProtocolVersion(); got != tt.want {
				t.Errorf("ProtocolVersion() = %q, want %q", got, tt.want)
			}
			if res.ServerInfo == nil || res.ServerInfo.Name != "switchboard" {
				t.Errorf("default server info %+v, want name switchboard", res.ServerInfo)
			}
			if res.Instructions != "be nice" {
				t.Errorf("instructions %q, want the option's", res.Instructions)
			}
			if !s.Initialized() {
				t.Error("Initialized() false after initialize")
			}
			if ci := s.ClientInfo(); ci == nil || ci.Name != "client" {
				t.Errorf("ClientInfo() = %+v, want the client's", ci)
			}
			if cc := s.ClientCapabilities(); cc == nil || cc.RootsV2 == nil || !cc.RootsV2.ListChanged {
				t.Errorf("ClientCapabilities() = %+v, want roots.listChanged in RootsV2", cc)
			}
		})
	}
}

// TestInitializeRootsCapability: the roots capability is read into
// RootsV2, which the SDK's type does not fill from JSON (go-sdk#607).
func TestInitializeRootsCapability(t *testing.T) {
	tests := []struct {
		name, caps  string
		want        bool // RootsV2 set
		listChanged bool
	}{
		{name: "roots with listChanged", caps: `{"roots":{"listChanged":true}}`, want: true, listChanged: true},
		{name: "roots without listChanged", caps: `{"roots":{}}`, want: true},
		{name: "no roots", caps: `{"sampling":{}}`},
		{name: "no capabilities", caps: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, session.Options{}, nil)
			params := fmt.Sprintf(`{"protocolVersion":"2025-11-25","capabilities":%s}`, tt.caps)
			decode[mcp.InitializeResult](t, handle(t, s, call(t, 1, "initialize", json.RawMessage(params))))
			cc := s.ClientCapabilities()
			if got := cc != nil && cc.RootsV2 != nil; got != tt.want {
				t.Fatalf("RootsV2 set = %v, want %v (%+v)", got, tt.want, cc)
			}
			if tt.want && cc.RootsV2.ListChanged != tt.listChanged {
				t.Fatalf("RootsV2.ListChanged = %v, want %v", cc.RootsV2.ListChanged, tt.listChanged)
			}
		})
	}
}

func TestInitializeAnswersOptions(t *testing.T) {
	s := newSession(t, session.Options{
		ServerInfo:   &mcp.Implementation{Name: "sb", Version: "9"},
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	}, nil)
	res := initialize(t, s, "2025-06-18")
	if res.ServerInfo.Name != "sb" || res.ServerInfo.Version != "9" {
		t.Errorf("server info %+v, want the option's", res.ServerInfo)
	}
	if res.Capabilities == nil || res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
		t.Errorf("capabilities %+v, want the option's", res.Capabilities)
	}
}

func TestInitializeBadParams(t *testing.T) {
	s := newSession(t, session.Options{}, nil)
	wantError(t, handle(t, s, call(t, 1, "initialize", json.RawMessage(`[1,2]`))), jsonrpc.CodeInvalidParams, "initialize")
	if s.Initialized() {
		t.Error("a refused initialize initialized the session")
	}
}

func TestBeforeInitialize(t *testing.T) {
	var calls atomic.Int32
	s := newSession(t, session.Options{Methods: session.Methods{
		"tools/list": func(context.Context, *session.Request) (any, error) {
			calls.Add(1)
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{}}, nil
		},
	}}, nil)
	for _, m := range []string{"tools/list", "logging/setLevel", "nope/unknown"} {
		t.Run("refused "+m, func(t *testing.T) {
			wantError(t, handle(t, s, call(t, 1, m, map[string]any{"level": "info"})), jsonrpc.CodeInvalidRequest, "initialization")
		})
	}
	t.Run("ping answered", func(t *testing.T) {
		if r := handle(t, s, call(t, 2, "ping", nil)); r.Error != nil || string(r.Result) != "{}" {
			t.Errorf("ping: result %s error %v, want {}", r.Result, r.Error)
		}
	})
	t.Run("server/discover answered", func(t *testing.T) {
		res := decode[mcp.DiscoverResult](t, handle(t, s, call(t, 3, "server/discover", nil)))
		if !slices.Equal(res.SupportedVersions, session.Versions) {
			t.Errorf("supported versions %v, want %v", res.SupportedVersions, session.Versions)
		}
	})
	if n := calls.Load(); n != 0 {
		t.Fatalf("tools/list handler ran %d times before initialize", n)
	}
	if s.LogLevel() != "" {
		t.Fatalf("logging/setLevel before initialize set the level to %q", s.LogLevel())
	}
	initialize(t, s, "2025-11-25")
	decode[mcp.ListToolsResult](t, handle(t, s, call(t, 4, "tools/list", nil)))
	if n := calls.Load(); n != 1 {
		t.Fatalf("tools/list handler ran %d times after initialize, want 1", n)
	}
}

func TestDispatchAnswers(t *testing.T) {
	type ctxKey struct{}
	var gotExtra, gotValue any
	s := newSession(t, session.Options{Methods: session.Methods{
		"raw": func(context.Context, *session.Request) (any, error) {
			return json.RawMessage(`{"b":2,"a":1}`), nil
		},
		"nil": func(context.Context, *session.Request) (any, error) { return nil, nil },
		"rpcerr": func(context.Context, *session.Request) (any, error) {
			return nil, fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: 42, Message: "mine"})
		},
		"goerr": func(context.Context, *session.Request) (any, error) {
			return nil, errors.New("token s3cr3t leaked")
		},
		"unencodable": func(context.Context, *session.Request) (any, error) { return make(chan int), nil },
		"echo": func(ctx context.Context, r *session.Request) (any, error) {
			gotExtra, gotValue = r.Extra, ctx.Value(ctxKey{})
			return map[string]any{"method": r.Method, "params": r.Params, "id": r.ID.Raw(), "sid": r.Session.ID()}, nil
		},
	}, ID: "sess-1"}, nil)
	initialize(t, s, "")

	t.Run("raw result sent as it is", func(t *testing.T) {
		if r := handle(t, s, call(t, 1, "raw", nil)); string(r.Result) != `{"b":2,"a":1}` {
			t.Errorf("result %s, want the handler's bytes", r.Result)
		}
	})
	t.Run("nil result is an empty object", func(t *testing.T) {
		if r := handle(t, s, call(t, 1, "nil", nil)); r.Error != nil || string(r.Result) != "{}" {
			t.Errorf("result %s error %v, want {}", r.Result, r.Error)
		}
	})
	t.Run("jsonrpc error sent as it is", func(t *testing.T) {
		wantError(t, handle(t, s, call(t, 1, "rpcerr", nil)), 42, "mine")
	})
	t.Run("other error is a generic internal error", func(t *testing.T) {
		r := handle(t, s, call(t, 1, "goerr", nil))
		wantError(t, r, jsonrpc.CodeInternalError, "internal error")
		if strings.Contains(r.Error.Error(), "s3cr3t") {
			t.Errorf("error %q leaks the handler's error", r.Error)
		}
	})
	t.Run("unencodable result is an internal error", func(t *testing.T) {
		wantError(t, handle(t, s, call(t, 1, "unencodable", nil)), jsonrpc.CodeInternalError, "internal error")
	})
	t.Run("unknown method", func(t *testing.T) {
		wantError(t, handle(t, s, call(t, 1, "nope", nil)), jsonrpc.CodeMethodNotFound, `"nope"`)
	})
	t.Run("handler sees the request", func(t *testing.T) {
		req := call(t, "x", "echo", map[string]int{"n": 1})
		req.Extra = "extra"
		out := newRecorder()
		s.Handle(context.WithValue(context.Background(), ctxKey{}, "value"), req, out)
		got := decode[map[string]any](t, response(t, out.next(t), req.ID))
		want := map[string]any{"method": "echo", "params": map[string]any{"n": 1.0}, "id": "x", "sid": "sess-1"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("handler saw %v, want %v", got, want)
		}
		if gotExtra != "extra" || gotValue != "value" {
			t.Errorf("handler saw Extra %v and ctx value %v, want the transport's", gotExtra, gotValue)
		}
	})
}

func TestSetLevelAndLogFiltering(t *testing.T) {
	var levels []mcp.LoggingLevel
	out := newRecorder()
	s := newSession(t, session.Options{
		OnLevel: func(_ *session.Session, l mcp.LoggingLevel) { levels = append(levels, l) },
		Methods: session.Methods{
			"log": func(ctx context.Context, r *session.Request) (any, error) {
				for _, l := range []mcp.LoggingLevel{"debug", "warning", "critical"} {
					if err := r.Log(ctx, &mcp.LoggingMessageParams{Level: l, Data: "request " + string(l)}); err != nil {
						return nil, err
					}
				}
				return nil, nil
			},
		},
	}, out)
	initialize(t, s, "")
	ctx := context.Background()
	logAll := func() {
		for _, l := range []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
			if err := s.Log(ctx, &mcp.LoggingMessageParams{Level: l, Data: "session " + string(l)}); err != nil {
				t.Fatalf("Log %s: %v", l, err)
			}
		}
	}
	logged := func(msgs []jsonrpc.Message) []string {
		var got []string
		for _, m := range msgs {
			r, ok := m.(*jsonrpc.Request)
			if !ok || r.Method != "notifications/message" {
				continue
			}
			var p mcp.LoggingMessageParams
			if err := json.Unmarshal(r.Params, &p); err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Data.(string))
		}
		return got
	}

	logAll()
	if got := logged(out.messages()); len(got) != 0 {
		t.Fatalf("logged %v before the client set a level, want nothing", got)
	}

	wantError(t, handle(t, s, call(t, 1, "logging/setLevel", &mcp.SetLoggingLevelParams{Level: "loud"})), jsonrpc.CodeInvalidParams, "loud")
	if s.LogLevel() != "" || len(levels) != 0 {
		t.Fatalf("an unknown level was taken: LogLevel %q, OnLevel %v", s.LogLevel(), levels)
	}

	if r := handle(t, s, call(t, 2, "logging/setLevel", &mcp.SetLoggingLevelParams{Level: "error"})); r.Error != nil {
		t.Fatalf("setLevel: %v", r.Error)
	}
	if s.LogLevel() != "error" || !slices.Equal(levels, []mcp.LoggingLevel{"error"}) {
		t.Fatalf("LogLevel %q, OnLevel calls %v, want error once", s.LogLevel(), levels)
	}
	logAll()
	want := []string{"session error", "session critical", "session alert", "session emergency"}
	// The session stream's notifications are written by the outbox's
	// sender: wait for as many as are wanted, then look at all.
	for range want {
		out.next(t)
	}
	if got := logged(out.messages()); !slices.Equal(got, want) {
		t.Fatalf("session stream logged %v, want %v", got, want)
	}

	// A request's log messages go on its own stream, filtered the same way.
	before := len(out.messages())
	reqOut := newRecorder()
	s.Handle(ctx, call(t, 3, "log", nil), reqOut)
	msgs := reqOut.messages()
	if got, want := logged(msgs), []string{"request critical"}; !slices.Equal(got, want) {
		t.Fatalf("request stream logged %v, want %v", got, want)
	}
	response(t, msgs[len(msgs)-1], makeID(t, 3))
	if n := len(out.messages()); n != before {
		t.Fatalf("a request's log messages went to the session stream (%d new)", n-before)
	}
}

func TestLevelRank(t *testing.T) {
	order := []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
	for i, l := range order {
		if got := session.LevelRank(l); got != i {
			t.Errorf("LevelRank(%q) = %d, want %d", l, got, i)
		}
	}
	if got := session.LevelRank("loud"); got != len(order) {
		t.Errorf("LevelRank(unknown) = %d, want %d", got, len(order))
	}
}

func TestNoStream(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, session.Options{}, nil)
	if err := s.Notify(ctx, "notifications/tools/list_changed", nil); !errors.Is(err, session.ErrNoStream) {
		t.Fatalf("Notify without a stream: %v, want ErrNoStream", err)
	}
	if _, err := s.Ask(ctx, "roots/list", nil); !errors.Is(err, session.ErrNoStream) {
		t.Fatalf("Ask without a stream: %v, want ErrNoStream", err)
	}
	out := newRecorder()
	s.SetStream(out)
	if err := s.Notify(ctx, "notifications/tools/list_changed", nil); err != nil {
		t.Fatalf("Notify after SetStream: %v", err)
	}
	if m, ok := out.next(t).(*jsonrpc.Request); !ok || m.Method != "notifications/tools/list_changed" || m.IsCall() {
		t.Fatalf("stream got %v, want the notification", m)
	}
	s.SetStream(nil)
	if err := s.Notify(ctx, "notifications/tools/list_changed", nil); !errors.Is(err, session.ErrNoStream) {
		t.Fatalf("Notify after SetStream(nil): %v, want ErrNoStream", err)
	}
}

func TestNotifyEncodeError(t *testing.T) {
	out := newRecorder()
	s := newSession(t, session.Options{}, out)
	if err := s.Notify(context.Background(), "x", make(chan int)); err == nil || !strings.Contains(err.Error(), "x:") {
		t.Fatalf("Notify with unencodable params: %v, want an error naming the method", err)
	}
	if n := len(out.messages()); n != 0 {
		t.Fatalf("%d messages written for unencodable params", n)
	}
}

func TestRequestNotifyGoesToRequestStream(t *testing.T) {
	sessOut := newRecorder()
	s := newSession(t, session.Options{Methods: session.Methods{
		"progress": func(ctx context.Context, r *session.Request) (any, error) {
			for i := range 3 {
				if err := r.Notify(ctx, "notifications/progress", map[string]any{"progressToken": "t", "progress": i}); err != nil {
					return nil, err
				}
			}
			return map[string]string{"done": "yes"}, nil
		},
	}}, sessOut)
	initialize(t, s, "")
	reqOut := newRecorder()
	req := call(t, 9, "progress", nil)
	s.Handle(context.Background(), req, reqOut)
	msgs := reqOut.messages()
	if len(msgs) != 4 {
		t.Fatalf("request stream got %d messages, want 3 notifications and the answer:\n%s", len(msgs), dump(msgs))
	}
	for i, m := range msgs[:3] {
		if n, ok := m.(*jsonrpc.Request); !ok || n.Method != "notifications/progress" || !strings.Contains(string(n.Params), fmt.Sprintf(`"progress":%d`, i)) {
			t.Fatalf("message %d is %s, want progress %d", i, dump([]jsonrpc.Message{m}), i)
		}
	}
	response(t, msgs[3], req.ID)
	if n := len(sessOut.messages()); n != 0 {
		t.Fatalf("session stream got %d messages, want none", n)
	}
}

func TestDuplicateInFlightID(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	s := newSession(t, session.Options{Methods: session.Methods{"block": b.handle}}, nil)
	initialize(t, s, "")
	id := makeID(t, 1)
	first := newRecorder()
	s.Go(context.Background(), call(t, 1, "block", nil), first)
	b.waitStarted(t, id)

	for _, via := range []string{"Handle", "Go"} {
		t.Run(via, func(t *testing.T) {
			dup := newRecorder()
			if via == "Handle" {
				s.Handle(context.Background(), call(t, 1, "block", nil), dup)
			} else {
				s.Go(context.Background(), call(t, 1, "block", nil), dup)
			}
			wantError(t, response(t, dup.next(t), id), jsonrpc.CodeInvalidRequest, "duplicate")
		})
	}
	if n := b.calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want once", n)
	}
	b.Release(id)
	if got := decode[map[string]any](t, response(t, first.next(t), id)); got["released"] != 1.0 {
		t.Fatalf("first call answered %v, want its own result", got)
	}
}

// reuser is a Stream that, when the answer to the request with ID id first
// arrives, hands a new request with the same ID to the session before
// Write returns, as a fast client may.
type reuser struct {
	*recorder
	s     *session.Session
	id    jsonrpc.ID
	async bool // Go instead of Handle
	again *recorder
	once  sync.Once
}

func (r *reuser) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := r.recorder.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == r.id {
		r.once.Do(func() {
			next := &jsonrpc.Request{ID: r.id, Method: "ping"}
			if r.async {
				r.s.Go(context.Background(), next, r.again)
			} else {
				r.s.Handle(context.Background(), next, r.again)
			}
		})
	}
	return err
}

func TestIDReusableOnceAnswered(t *testing.T) {
	checkGoroutines(t)
	for _, via := range []string{"Handle", "Go"} {
		t.Run(via, func(t *testing.T) {
			s := newSession(t, session.Options{Methods: session.Methods{
				"work": func(context.Context, *session.Request) (any, error) { return "done", nil },
			}}, nil)
			initialize(t, s, "")
			id := makeID(t, 7)
			out := &reuser{recorder: newRecorder(), s: s, id: id, async: via == "Go", again: newRecorder()}
			req := call(t, 7, "work", nil)
			if via == "Go" {
				s.Go(context.Background(), req, out)
			} else {
				s.Handle(context.Background(), req, out)
			}
			if got := decode[string](t, response(t, out.next(t), id)); got != "done" {
				t.Fatalf("first answer %q", got)
			}
			if r := response(t, out.again.next(t), id); r.Error != nil {
				t.Fatalf("request reusing an answered ID: %v, want it to run", r.Error)
			}
		})
	}
}

// TestSlotFreeOnceAnswered: with MaxInFlight 1, a client that sends its
// next request as soon as it has the previous answer is not refused; the
// slot, like the ID, is free before the answer goes out.
func TestSlotFreeOnceAnswered(t *testing.T) {
	checkGoroutines(t)
	s := newSession(t, session.Options{MaxInFlight: 1, Methods: session.Methods{
		"work": func(context.Context, *session.Request) (any, error) { return "done", nil },
	}}, nil)
	initialize(t, s, "")
	first, second := mustID(1), mustID(2)
	again := newRecorder()
	var once sync.Once
	out := &hookStream{recorder: newRecorder(), hook: func(m jsonrpc.Message) {
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == first {
			once.Do(func() { s.Go(context.Background(), &jsonrpc.Request{ID: second, Method: "work"}, again) })
		}
	}}
	s.Go(context.Background(), &jsonrpc.Request{ID: first, Method: "work"}, out)
	response(t, out.next(t), first)
	if r := response(t, again.next(t), second); r.Error != nil {
		t.Fatalf("request sent once the previous was answered: %v, want it to run", r.Error)
	}
}

// hookStream records to recorder, then calls hook with each message.
type hookStream struct {
	*recorder
	hook func(jsonrpc.Message)
}

func (h *hookStream) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := h.recorder.Write(ctx, msg)
	h.hook(msg)
	return err
}

func TestCancelledNotification(t *testing.T) {
	checkGoroutines(t)
	for _, tt := range []struct {
		name string
		id   any
	}{
		{name: "number ID", id: 5},
		{name: "string ID", id: "abc"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cancelled := make(chan error, 1)
			s := newSession(t, session.Options{Methods: session.Methods{
				"wait": func(ctx context.Context, r *session.Request) (any, error) {
					<-ctx.Done()
					cancelled <- ctx.Err()
					return nil, ctx.Err()
				},
			}}, nil)
			initialize(t, s, "")
			out := newRecorder()
			id := makeID(t, tt.id)
			s.Go(context.Background(), call(t, tt.id, "wait", nil), out)
			// No wait for the handler to start: the request is in flight
			// once Go returned.
			s.Go(context.Background(), notification(t, "notifications/cancelled", &mcp.CancelledParams{RequestID: tt.id, Reason: "user"}), out)
			r := response(t, out.next(t), id)
			wantError(t, r, jsonrpc.CodeInternalError, "internal error")
			if err := <-cancelled; !errors.Is(err, context.Canceled) {
				t.Fatalf("handler ctx ended with %v, want Canceled", err)
			}
		})
	}
}

func TestCancelledIgnoresOthers(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	s := newSession(t, session.Options{Methods: session.Methods{"block": b.handle}}, nil)
	initialize(t, s, "")
	out := newRecorder()
	id := makeID(t, 1)
	s.Go(context.Background(), call(t, 1, "block", nil), out)
	b.waitStarted(t, id)
	for _, params := range []string{`{"requestId":2}`, `{"requestId":"1"}`, `{"requestId":true}`, `[1]`, `{}`} {
		s.Handle(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(params)}, out)
	}
	s.Cancel(makeID(t, 3))
	b.Release(id)
	if got := decode[map[string]any](t, response(t, out.next(t), id)); got["released"] != 1.0 {
		t.Fatalf("call answered %v, want its result: a cancellation naming another ID cancelled it", got)
	}
}

func TestCancelMethod(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	s := newSession(t, session.Options{Methods: session.Methods{"block": b.handle}}, nil)
	initialize(t, s, "")
	out := newRecorder()
	s.Go(context.Background(), call(t, "c", "block", nil), out)
	s.Cancel(makeID(t, "c"))
	wantError(t, response(t, out.next(t), makeID(t, "c")), jsonrpc.CodeInternalError, "internal error")
}

func TestAsk(t *testing.T) {
	checkGoroutines(t)
	ctx := context.Background()
	out := newRecorder()
	s := newSession(t, session.Options{}, out)

	type answer struct {
		raw json.RawMessage
		err error
	}
	ask := func() (*jsonrpc.Request, chan answer) {
		ch := make(chan answer, 1)
		go func() {
			raw, err := s.Ask(ctx, "roots/list", &mcp.ListRootsParams{})
			ch <- answer{raw, err}
		}()
		req, ok := out.next(t).(*jsonrpc.Request)
		if !ok || !req.IsCall() || req.Method != "roots/list" {
			t.Fatalf("stream got %v, want the roots/list request", req)
		}
		return req, ch
	}

	t.Run("result", func(t *testing.T) {
		req, ch := ask()
		s.Handle(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`)}, nil)
		a := <-ch
		if a.err != nil || string(a.raw) != `{"roots":[{"uri":"file:///a"}]}` {
			t.Fatalf("Ask = %s, %v; want the client's result", a.raw, a.err)
		}
	})
	t.Run("error", func(t *testing.T) {
		req, ch := ask()
		// Through Go: an answer is handled inline.
		s.Go(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: -1, Message: "no roots"}}, nil)
		a := <-ch
		var we *jsonrpc.Error
		if !errors.As(a.err, &we) || we.Code != -1 {
			t.Fatalf("Ask error %v, want the client's error", a.err)
		}
	})
	t.Run("IDs differ", func(t *testing.T) {
		r1, ch1 := ask()
		r2, ch2 := ask()
		if r1.ID == r2.ID {
			t.Fatalf("two asks share ID %v", r1.ID.Raw())
		}
		// Answered in the other order: each gets its own.
		s.Handle(ctx, &jsonrpc.Response{ID: r2.ID, Result: json.RawMessage(`2`)}, nil)
		s.Handle(ctx, &jsonrpc.Response{ID: r1.ID, Result: json.RawMessage(`1`)}, nil)
		if a1, a2 := <-ch1, <-ch2; string(a1.raw) != "1" || string(a2.raw) != "2" {
			t.Fatalf("answers %s and %s, want 1 and 2", a1.raw, a2.raw)
		}
	})
	t.Run("unknown answer ignored", func(t *testing.T) {
		s.Handle(ctx, &jsonrpc.Response{ID: makeID(t, "sb-999"), Result: json.RawMessage(`{}`)}, nil)
	})
}

func TestRequestAskUsesRequestStream(t *testing.T) {
	checkGoroutines(t)
	sessOut := newRecorder()
	s := newSession(t, session.Options{Methods: session.Methods{
		"roots": func(ctx context.Context, r *session.Request) (any, error) {
			return r.Ask(ctx, "roots/list", nil)
		},
	}}, sessOut)
	initialize(t, s, "")
	reqOut := newRecorder()
	s.Go(context.Background(), call(t, 1, "roots", nil), reqOut)
	ask, ok := reqOut.next(t).(*jsonrpc.Request)
	if !ok || ask.Method != "roots/list" {
		t.Fatalf("request stream got %v, want roots/list", ask)
	}
	s.Go(context.Background(), &jsonrpc.Response{ID: ask.ID, Result: json.RawMessage(`{"roots":[]}`)}, nil)
	if r := response(t, reqOut.next(t), makeID(t, 1)); string(r.Result) != `{"roots":[]}` {
		t.Fatalf("answer %s, want the client's roots", r.Result)
	}
	if n := len(sessOut.messages()); n != 0 {
		t.Fatalf("session stream got %d messages, want none", n)
	}
}

func TestAskCancelledSendsCancelled(t *testing.T) {
	checkGoroutines(t)
	out := newRecorder()
	s := newSession(t, session.Options{}, out)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Ask(ctx, "sampling/createMessage", map[string]any{})
		done <- err
	}()
	req, ok := out.next(t).(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		t.Fatalf("stream got %v, want the request", req)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask = %v, want Canceled", err)
	}
	n, ok := out.next(t).(*jsonrpc.Request)
	if !ok || n.Method != "notifications/cancelled" || n.IsCall() {
		t.Fatalf("stream got %v, want notifications/cancelled", n)
	}
	var p mcp.CancelledParams
	if err := json.Unmarshal(n.Params, &p); err != nil {
		t.Fatal(err)
	}
	if p.RequestID != req.ID.Raw() {
		t.Fatalf("cancelled names %v, want %v", p.RequestID, req.ID.Raw())
	}
	// A late answer is dropped, not delivered or blocked on.
	s.Handle(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}, nil)
}

func TestClose(t *testing.T) {
	checkGoroutines(t)
	var closes atomic.Int32
	b := newBlocker()
	out := newRecorder()
	s := session.New(session.Options{
		Logger:  testLogger(t),
		Methods: session.Methods{"block": b.handle},
		OnClose: func(*session.Session) { closes.Add(1) },
	}, out)
	initialize(t, s, "")
	for i := range 3 {
		s.Go(context.Background(), call(t, i, "block", nil), out)
	}
	askErr := make(chan error, 1)
	go func() {
		_, err := s.Ask(context.Background(), "roots/list", nil)
		askErr <- err
	}()
	for range 3 {
		<-b.started
	}
	if m, ok := out.next(t).(*jsonrpc.Request); !ok || m.Method != "roots/list" {
		t.Fatalf("stream got %v, want the ask", m)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(s.Close)
	}
	wg.Wait()
	if n := closes.Load(); n != 1 {
		t.Fatalf("OnClose ran %d times, want once", n)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	// Close waited for the requests: each was cancelled and answered.
	answered := map[any]bool{}
	for _, m := range out.messages() {
		if r, ok := m.(*jsonrpc.Response); ok {
			wantError(t, r, jsonrpc.CodeInternalError, "internal error")
			answered[r.ID.Raw()] = true
		}
	}
	if len(answered) != 3 {
		t.Fatalf("answered %v after Close, want the 3 cancelled calls", answered)
	}
	if err := <-askErr; !errors.Is(err, session.ErrClosed) {
		t.Fatalf("pending Ask = %v, want ErrClosed", err)
	}
	if _, err := s.Ask(context.Background(), "roots/list", nil); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Ask after Close = %v, want ErrClosed", err)
	}
	// A request after Close is not run.
	late := newRecorder()
	s.Handle(context.Background(), call(t, 10, "block", nil), late)
	s.Go(context.Background(), call(t, 11, "block", nil), late)
	if n := b.calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3: a request after Close ran", n)
	}
	s.Close()
	if n := closes.Load(); n != 1 {
		t.Fatalf("OnClose ran %d times after a second Close, want once", n)
	}
}

func TestMaxInFlight(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	out := newRecorder()
	s := newSession(t, session.Options{MaxInFlight: 2, Methods: session.Methods{"block": b.handle}}, out)
	initialize(t, s, "")
	ctx := context.Background()
	s.Go(ctx, call(t, 1, "block", nil), out)
	s.Go(ctx, call(t, 2, "block", nil), out)
	s.Go(ctx, call(t, 3, "block", nil), out)
	// The third is answered at once, without waiting for the others.
	wantError(t, response(t, out.next(t), makeID(t, 3)), jsonrpc.CodeInternalError, "limit 2")

	// Notifications and answers are never refused.
	askDone := make(chan error, 1)
	go func() {
		_, err := s.Ask(ctx, "roots/list", nil)
		askDone <- err
	}()
	ask := out.next(t).(*jsonrpc.Request)
	s.Go(ctx, &jsonrpc.Response{ID: ask.ID, Result: json.RawMessage(`{}`)}, nil)
	if err := <-askDone; err != nil {
		t.Fatalf("answer handed to Go at the bound: %v", err)
	}
	s.Go(ctx, notification(t, "notifications/cancelled", &mcp.CancelledParams{RequestID: 1}), out)
	wantError(t, response(t, out.next(t), makeID(t, 1)), jsonrpc.CodeInternalError, "internal error")

	// A slot is free again.
	s.Go(ctx, call(t, 4, "block", nil), out)
	for _, id := range []any{2, 4} {
		b.Release(makeID(t, id))
	}
	got := map[any]bool{}
	for range 2 {
		r := out.next(t).(*jsonrpc.Response)
		if r.Error != nil {
			t.Fatalf("answer %v: %v", r.ID.Raw(), r.Error)
		}
		got[r.ID.Raw()] = true
	}
	if !got[int64(2)] || !got[int64(4)] {
		t.Fatalf("answered %v, want 2 and 4", got)
	}
	if n := b.calls.Load(); n != 3 {
		t.Fatalf("handler ran %d times, want 3 (1, 2 and 4)", n)
	}
}

func TestDrain(t *testing.T) {
	checkGoroutines(t)
	b := newBlocker()
	out := newRecorder()
	s := newSession(t, session.Options{Methods: session.Methods{"block": b.handle}}, out)
	initialize(t, s, "")
	if err := s.Drain(context.Background()); err != nil {
		t.Fatalf("Drain with nothing in flight: %v", err)
	}
	s.Go(context.Background(), call(t, 1, "block", nil), out)
	s.Go(context.Background(), call(t, 2, "block", nil), out)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Drain(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain with requests in flight and ctx done = %v, want Canceled", err)
	}
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		drained <- s.Drain(ctx)
	}()
	b.Release(makeID(t, 1))
	response(t, out.next(t), makeID(t, 1))
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v with request 2 still in flight", err)
	default:
	}
	b.Release(makeID(t, 2))
	if err := <-drained; err != nil {
		t.Fatalf("Drain = %v, want nil once both answered", err)
	}
}

func TestRootsChanged(t *testing.T) {
	checkGoroutines(t)
	called := make(chan *session.Session, 1)
	s := newSession(t, session.Options{OnRootsChanged: func(s *session.Session) { called <- s }}, nil)
	s.Go(context.Background(), notification(t, "notifications/roots/list_changed", nil), nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case got := <-called:
		if got != s {
			t.Fatal("OnRootsChanged got another session")
		}
	case <-ctx.Done():
		t.Fatal("OnRootsChanged not called")
	}
	s.Close()
	s.Handle(context.Background(), notification(t, "notifications/roots/list_changed", nil), nil)
	select {
	case <-called:
		t.Fatal("OnRootsChanged called after Close")
	default:
	}
}

// TestRootsChangedMayAsk: the callback runs off the caller's goroutine, so
// it may ask the client while the transport waits for the answer.
func TestRootsChangedMayAsk(t *testing.T) {
	checkGoroutines(t)
	out := newRecorder()
	got := make(chan string, 1)
	s := newSession(t, session.Options{OnRootsChanged: func(s *session.Session) {
		raw, err := s.Ask(context.Background(), "roots/list", nil)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(raw)
	}}, out)
	s.Handle(context.Background(), notification(t, "notifications/roots/list_changed", nil), nil)
	ask := out.next(t).(*jsonrpc.Request)
	s.Handle(context.Background(), &jsonrpc.Response{ID: ask.ID, Result: json.RawMessage(`{"roots":[]}`)}, nil)
	if g := <-got; g != `{"roots":[]}` {
		t.Fatalf("callback's Ask got %s", g)
	}
}

func TestSubscriptions(t *testing.T) {
	s := newSession(t, session.Options{}, nil)
	if !s.Subscribe("b://") || !s.Subscribe("a://") {
		t.Fatal("a new subscription is not new")
	}
	if s.Subscribe("a://") {
		t.Fatal("a repeated subscription is new")
	}
	if !s.Subscribed("a://") || s.Subscribed("c://") {
		t.Fatal("Subscribed disagrees with Subscribe")
	}
	if got := s.Subscriptions(); !slices.Equal(got, []string{"a://", "b://"}) {
		t.Fatalf("Subscriptions() = %v, want sorted [a:// b://]", got)
	}
	if !s.Unsubscribe("a://") || s.Unsubscribe("a://") || s.Subscribed("a://") {
		t.Fatal("Unsubscribe: want true once, then false")
	}
}

func TestAccessors(t *testing.T) {
	s := newSession(t, session.Options{ID: "id-1", Principal: "alice"}, nil)
	if s.ID() != "id-1" || s.Principal() != "alice" {
		t.Fatalf("ID %q Principal %v, want the options'", s.ID(), s.Principal())
	}
}

// TestConcurrentCalls runs many calls, cancellations and log-level changes
// at once; under -race it checks the session's locking, and that every call
// is answered exactly once.
func TestConcurrentCalls(t *testing.T) {
	checkGoroutines(t)
	out := newRecorder()
	s := newSession(t, session.Options{Methods: session.Methods{
		"work": func(ctx context.Context, r *session.Request) (any, error) {
			if err := r.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: "x"}); err != nil {
				return nil, err
			}
			return r.ID.Raw(), nil
		},
	}}, out)
	initialize(t, s, "")
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := w*each + i
				s.Go(context.Background(), &jsonrpc.Request{ID: mustID(id), Method: "work"}, out)
				if i%5 == 0 {
					s.Go(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(fmt.Sprintf(`{"requestId":%d}`, id))}, out)
				}
				if i%7 == 0 {
					s.Handle(context.Background(), &jsonrpc.Request{ID: mustID(fmt.Sprintf("lvl-%d", id)), Method: "logging/setLevel", Params: json.RawMessage(`{"level":"error"}`)}, out)
				}
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	s.Close() // waits until every answer was written
	seen := map[any]int{}
	for _, m := range out.messages() {
		if r, ok := m.(*jsonrpc.Response); ok {
			if _, isLevel := r.ID.Raw().(string); !isLevel {
				seen[r.ID.Raw()]++
			}
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d calls answered, want %d", len(seen), workers*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("call %v answered %d times", id, n)
		}
	}
}

// testLogger sends a test's log lines to t.Log.
func testLogger(t *testing.T) hclog.Logger { return testutil.Logger(t, "session") }

// checkGoroutines fails the test if it leaves goroutines behind.
func checkGoroutines(tb testing.TB) {
	tb.Helper()
	testutil.CheckGoroutines(tb, wait)
}
