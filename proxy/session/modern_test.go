package session_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// modernMeta is the _meta of a 2026-07-28 request, with extra keys.
func modernMeta(extra string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}` + extra + `}`
}

// answer hands one request to a fresh session and returns its answer as
// the client reads it.
func answer(t *testing.T, opt session.Options, method, params string) string {
	t.Helper()
	s := newSession(t, opt, nil)
	out := newRecorder()
	s.Handle(context.Background(), &jsonrpc.Request{ID: makeID(t, 1), Method: method, Params: json.RawMessage(params)}, out)
	data, err := jsonrpc.EncodeMessage(out.next(t))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestModernRequests checks the 2026-07-28 era of one request: no
// initialize needed, its version, capabilities and log level from _meta,
// removed methods refused, results typed and cacheable, resource not found
// translated, and nothing of it left in the session.
func TestModernRequests(t *testing.T) {
	var seen *session.Request
	methods := session.Methods{
		"tools/list": func(_ context.Context, r *session.Request) (any, error) {
			seen = r
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{}}, nil
		},
		"tools/call": func(ctx context.Context, r *session.Request) (any, error) {
			_ = r.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "hidden"})
			_ = r.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "shown"})
			_, err := r.Ask(ctx, "roots/list", nil)
			if err == nil {
				t.Error("a 2026-07-28 request sent the client a request")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
		},
		"resources/read": func(context.Context, *session.Request) (any, error) {
			return nil, mcp.ResourceNotFoundError("file:///x")
		},
	}
	opt := session.Options{Methods: methods, Capabilities: &mcp.ServerCapabilities{}, Cache: session.Cache{TTL: 0, Private: true}}
	for _, tc := range []struct{ name, method, params, want string }{
		{"list", "tools/list", `{` + modernMeta("") + `}`, `"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}`},
		{"discover", "server/discover", `{` + modernMeta("") + `}`, `"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`},
		{"removed", "ping", `{` + modernMeta("") + `}`, `"code":-32601`},
		{"initialize", "initialize", `{` + modernMeta("") + `}`, `not part of protocol 2026-07-28`},
		{"not found", "resources/read", `{"uri":"file:///x",` + modernMeta("") + `}`, `"code":-32602`},
		{"no capabilities", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, `missing or invalid _meta field \"io.modelcontextprotocol/clientCapabilities\"`},
		{"bad level", "tools/list", `{` + modernMeta(`,"io.modelcontextprotocol/logLevel":"loud"`) + `}`, `io.modelcontextprotocol/logLevel`},
		{"bad info", "tools/list", `{` + modernMeta(`,"io.modelcontextprotocol/clientInfo":7`) + `}`, `io.modelcontextprotocol/clientInfo`},
		{"unknown version", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2031-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`, `"code":-32022`},
		{"legacy before initialize", "tools/list", `{}`, `invalid during session initialization`},
		{"legacy not found", "resources/read", `{"uri":"file:///x"}`, `invalid during session initialization`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := answer(t, opt, tc.method, tc.params); !strings.Contains(got, tc.want) {
				t.Fatalf("answer %s, want %s", got, tc.want)
			}
		})
	}
	if seen == nil || !seen.Modern() || seen.ProtocolVersion() != "2026-07-28" || seen.ClientCapabilities().RootsV2 == nil {
		t.Fatalf("the handler saw %+v", seen)
	}
	if seen.Session.Initialized() || seen.Session.ProtocolVersion() != "" {
		t.Fatal("a 2026-07-28 request left state in its session")
	}

	// The log level is the request's: only what it asked for goes out.
	s := newSession(t, opt, nil)
	out := newRecorder()
	s.Handle(context.Background(), &jsonrpc.Request{ID: makeID(t, 2), Method: "tools/call",
		Params: json.RawMessage(`{"name":"x",` + modernMeta(`,"io.modelcontextprotocol/logLevel":"info"`) + `}`)}, out)
	got := dump(out.messages())
	if strings.Contains(got, "hidden") || !strings.Contains(got, "shown") || !strings.Contains(got, `"result":{"resultType":"complete","content":[]}`) {
		t.Fatalf("call wrote:\n%s", got)
	}
}

// TestDiscoverOffer checks that OfferModern decides whether a client is
// offered 2026-07-28, and that a legacy discover lists legacy versions.
func TestDiscoverOffer(t *testing.T) {
	opt := session.Options{Methods: session.Methods{}, OfferModern: func(_ *session.Session, c *mcp.ClientCapabilities) bool { return c.Sampling == nil }}
	withSampling := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}`
	if got := answer(t, opt, "server/discover", withSampling); !strings.Contains(got, `"supportedVersions":["2025-11-25",`) || !strings.Contains(got, `"resultType":"complete"`) {
		t.Fatalf("discover with sampling: %s", got)
	}
	if got := answer(t, opt, "server/discover", `{`+modernMeta("")+`}`); !strings.Contains(got, `"supportedVersions":["2026-07-28",`) {
		t.Fatalf("discover without sampling: %s", got)
	}
	if got := answer(t, opt, "server/discover", `{}`); !strings.Contains(got, `"supportedVersions":["2025-11-25",`) || strings.Contains(got, "resultType") {
		t.Fatalf("legacy discover: %s", got)
	}
}

// TestListen checks subscriptions/listen at the session: the
// acknowledgement first, then what the session announces, marked with
// the subscription and filtered, on the request's stream; the session's
// own stream back afterwards.
func TestListen(t *testing.T) {
	own := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt := session.Options{Methods: session.Methods{
		"subscriptions/listen": func(_ context.Context, r *session.Request) (any, error) {
			err := r.Listen(ctx, map[string]any{"notifications": map[string]bool{"toolsListChanged": true}},
				func(m string) bool { return m == "notifications/tools/list_changed" })
			return json.RawMessage(`{}`), err
		},
	}}
	s := newSession(t, opt, own)
	out := newRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Handle(context.Background(), &jsonrpc.Request{ID: makeID(t, "L"), Method: "subscriptions/listen", Params: json.RawMessage(`{` + modernMeta("") + `}`)}, out)
	}()
	ack, _ := jsonrpc.EncodeMessage(out.next(t))
	if !strings.Contains(string(ack), `"method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"},"notifications":`) {
		t.Fatalf("first message %s", ack)
	}
	_ = s.Notify(context.Background(), "notifications/prompts/list_changed", nil)
	_ = s.Notify(context.Background(), "notifications/tools/list_changed", nil)
	got, _ := jsonrpc.EncodeMessage(out.next(t))
	if want := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`; string(got) != want {
		t.Fatalf("announcement %s, want %s", got, want)
	}
	cancel()
	<-done
	_ = s.Notify(context.Background(), "notifications/prompts/list_changed", nil)
	if m := own.next(t); m.(*jsonrpc.Request).Method != "notifications/prompts/list_changed" {
		t.Fatalf("own stream got %+v", m)
	}
	for _, m := range out.messages() {
		if r, ok := m.(*jsonrpc.Request); ok && r.Method == "notifications/prompts/list_changed" {
			t.Fatal("a notification the listen did not ask for reached it")
		}
	}
}
