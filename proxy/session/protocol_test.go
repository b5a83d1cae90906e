package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

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
