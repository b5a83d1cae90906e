package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestModernUpstream puts switchboard in front of a server that speaks
// 2026-07-28 (the fixture over stateless streamable HTTP, found by the
// server/discover probe): its input requests, in tools/call and
// prompts/get, two and three rounds, reach a 2026-07-28 client as they
// are (the server's keys, switchboard's sealed state) and a legacy client
// as real elicitation requests; eight calls at once each get their own
// answers; a list change reaches a listening client; a request's log level
// goes with it.
func TestModernUpstream(t *testing.T) {
	t.Parallel()
	url, _ := startFixtureHTTP(t, "http", "--name", "m", "--stateless")
	s := startSwitchboard(t, map[string]any{"servers": map[string]any{"m": map[string]any{"type": "http", "url": url}}})
	testutil.Eventually(t, 20*time.Second, "m ready", func() bool { return s.serverStatus(t, "m")["state"] == "ready" })
	if p := s.serverStatus(t, "m")["protocol"]; p != "2026-07-28" {
		t.Fatalf("protocol %v, want 2026-07-28 (the probe's find)", p)
	}

	var asked atomic.Int32
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			n := questionRE.FindStringSubmatch(req.Params.Message)
			if n == nil {
				return nil, fmt.Errorf("unexpected question %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "a" + n[1]}}, nil
		},
	}
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("client="+version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-modern-upstream", Version: "1"}, opts).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			want := version
			if want == "" {
				want = "2026-07-28"
			}
			if v := cs.InitializeResult().ProtocolVersion; v != want {
				t.Fatalf("negotiated %q, want %q", v, want)
			}
			testutil.Eventually(t, 20*time.Second, "m's tools", func() bool { return listTools(t, cs)["mcp_m_elicit_rounds"] != nil })
			if got := textOf(mustCall(t, cs, "mcp_m_elicit_rounds", map[string]any{"rounds": 2})); !strings.Contains(got, "a1,a2") {
				t.Errorf("two rounds: %s", got)
			}
			prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp_m_interview"})
			if err != nil || len(prompt.Messages) != 1 || !strings.Contains(fmt.Sprint(prompt.Messages[0].Content.(*mcp.TextContent).Text), "answers: a1,a2") {
				t.Errorf("interview: %v %+v", err, prompt)
			}
			concurrentRounds(t, cs, "mcp_m_elicit_rounds", &asked)
		})
	}

	// The wire of a 2026-07-28 client: the upstream's own input key, a
	// state sealed by switchboard, refused when altered.
	meta := elicitMeta
	call := func(extra string) (int, string) {
		status, body, _ := elicitOnce(t, s.addr, "/mcp", "mcp_m_elicit_rounds", extra)
		return status, body
	}
	status, body, first := elicitOnce(t, s.addr, "/mcp", "mcp_m_elicit_rounds", "")
	if status != http.StatusOK || first.ResultType != "input_required" ||
		first.InputRequests["fixture"] == nil || !strings.HasPrefix(first.RequestState, "u.") {
		t.Fatalf("elicit_rounds: %d %s, want input_required with the server's key and a sealed state", status, body)
	}
	answer := `"inputResponses":{"fixture":{"action":"accept","content":{"answer":"yes"}}},`
	state := first.RequestState
	// One character of the server's state, then of the seal, changed.
	for _, i := range []int{3, len(state) - 5} {
		c := byte('A')
		if state[i] == 'A' {
			c = 'B'
		}
		altered := state[:i] + string(c) + state[i+1:]
		if status, body := call(answer + `"requestState":"` + altered + `",`); status != http.StatusBadRequest {
			t.Errorf("altered state %q: %d %s, want 400", altered, status, body)
		}
	}
	if status, body := call(answer + `"requestState":"` + state + `",`); status != http.StatusOK || !strings.Contains(body, "yes") {
		t.Errorf("sealed state: %d %s, want the call's result", status, body)
	}

	// The server's x-mcp-header argument goes in its Mcp-Param-* header,
	// computed from the server's own schema (its SDK refuses the call
	// without it), non-ASCII base64-wrapped.
	for _, region := range []string{"eu-west", "zürich"} {
		status, _, body = postRaw(t, s.addr, "/mcp", "tools/call", "mcp_m_header_echo",
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_m_header_echo","arguments":{"region":"`+region+`"},`+meta+`}}`)
		if status != http.StatusOK || !strings.Contains(body, "region "+region) {
			t.Errorf("header_echo %s: %d %s", region, status, body)
		}
	}

	// A request's log level reaches the server with it.
	logMeta := strings.Replace(meta, `"_meta":{`, `"_meta":{"io.modelcontextprotocol/logLevel":"info",`, 1)
	_, _, body = postRaw(t, s.addr, "/mcp", "tools/call", "mcp_m_log",
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_m_log","arguments":{"level":"info","message":"per-request"},`+logMeta+`}}`)
	if !strings.Contains(body, `"method":"notifications/message"`) || !strings.Contains(body, "per-request") {
		t.Errorf("log with the request's level: %s", body)
	}

	// A list change of the server reaches a listening 2026-07-28 client.
	changed := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-listen", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mustCall(t, cs, "mcp_m_set_description", map[string]any{"tool": "echo", "description": "changed"})
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed from the 2026-07-28 server")
	}
}

// TestSharedRequestStateKey: two switchboards with the same
// requestStateKey accept each other's sealed states (a 2026-07-28 call's
// retry may land on another replica); with another key, it is refused.
func TestSharedRequestStateKey(t *testing.T) {
	t.Parallel()
	url, _ := startFixtureHTTP(t, "http", "--name", "m", "--stateless")
	start := func(key string) *sb {
		t.Helper()
		s := startSwitchboardIn(t, t.TempDir(), t.TempDir(), map[string]any{
			"requestStateKey": "secret://env/SB_STATE_KEY",
			"servers":         map[string]any{"m": map[string]any{"type": "http", "url": url}},
		}, []string{"SB_STATE_KEY=" + key})
		testutil.Eventually(t, 20*time.Second, "m ready", func() bool { return s.serverStatus(t, "m")["state"] == "ready" })
		return s
	}
	const shared = "a deployment's key, shared by its replicas: 0123456789"
	a, b, other := start(shared), start(shared), start(shared+" but another")
	call := func(s *sb, extra string) (int, string) {
		status, body, _ := elicitOnce(t, s.addr, "/mcp", "mcp_m_elicit_rounds", extra)
		return status, body
	}
	_, body, first := elicitOnce(t, a.addr, "/mcp", "mcp_m_elicit_rounds", "")
	if first.RequestState == "" {
		t.Fatalf("first round: %s", body)
	}
	retry := `"inputResponses":{"fixture":{"action":"accept","content":{"answer":"from b"}}},"requestState":"` + first.RequestState + `",`
	if status, body := call(b, retry); status != http.StatusOK || !strings.Contains(body, "from b") {
		t.Errorf("the retry on a replica with the same key: %d %s", status, body)
	}
	if status, body := call(other, retry); status != http.StatusBadRequest || !strings.Contains(body, "-32602") {
		t.Errorf("the retry on a switchboard with another key: %d %s, want 400 and -32602", status, body)
	}
}
