package direct

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessions returns a server session initialized by a client speaking
// version ("" = the client's default), and one no client initialized.
func sessions(t *testing.T, version string) (initialized, fresh *mcp.ServerSession) {
	t.Helper()
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	_, st2 := mcp.NewInMemoryTransports()
	fresh, err = srv.Connect(ctx, st2, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close(); fresh.Close() })
	return ss, fresh
}

func request(t *testing.T, id any, method, params string) *jsonrpc.Request {
	t.Helper()
	var rid jsonrpc.ID
	if id != nil {
		var err error
		if rid, err = jsonrpc.MakeID(id); err != nil {
			t.Fatal(err)
		}
	}
	r := &jsonrpc.Request{ID: rid, Method: method}
	if params != "" {
		r.Params = json.RawMessage(params)
	}
	return r
}

// TestTake: what the runner takes, and what it leaves to the server.
func TestTake(t *testing.T) {
	legacy, fresh := sessions(t, "2025-11-25")
	modern, _ := sessions(t, v20260728)
	if modern.InitializeParams() == nil || modern.InitializeParams().ProtocolVersion != v20260728 {
		t.Fatalf("a client asking for %s negotiated %+v", v20260728, modern.InitializeParams())
	}
	r := New(context.Background(), func(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.CallToolResult{}, nil })
	call := `{"name":"t","arguments":{"a":1},"_meta":{"progressToken":"p"}}`
	extra := &mcp.RequestExtra{}

	c := r.Take(legacy, request(t, "1", "tools/call", call), extra)
	if c == nil {
		t.Fatal("an initialized 2025-11-25 tools/call was not taken")
	}
	if c.req.Session != legacy || c.req.Extra != extra || c.req.Params.Name != "t" || string(c.req.Params.Arguments) != `{"a":1}` || c.req.Params.GetProgressToken() != "p" {
		t.Fatalf("request as taken: %+v %+v", c.req, c.req.Params)
	}
	if r.Take(legacy, request(t, "1", "tools/call", call), extra) != nil {
		t.Error("an ID already in flight was taken again")
	}
	r.Run(c, func(context.Context, *jsonrpc.Response) {})
	if r.Take(legacy, request(t, "1", "tools/call", call), extra) == nil {
		t.Error("an ID was not free after its answer")
	}

	for _, tc := range []struct {
		name string
		ss   *mcp.ServerSession
		req  *jsonrpc.Request
	}{
		{"no session", nil, request(t, "2", "tools/call", call)},
		{"not initialized", fresh, request(t, "2", "tools/call", call)},
		{"2026-07-28 session", modern, request(t, "2", "tools/call", call)},
		{"another method", legacy, request(t, "2", "tools/list", `{}`)},
		{"a notification", legacy, request(t, nil, "tools/call", call)},
		{"no params", legacy, request(t, "2", "tools/call", "")},
		{"params not an object", legacy, request(t, "2", "tools/call", `[1]`)},
		{"params that do not decode", legacy, request(t, "2", "tools/call", `{"name":7}`)},
		{"per-request protocol", legacy, request(t, "2", "tools/call", `{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)},
		{"multi-round-trip state", legacy, request(t, "2", "tools/call", `{"name":"t","requestState":"s"}`)},
		{"multi-round-trip responses", legacy, request(t, "2", "tools/call", `{"name":"t","inputResponses":{}}`)},
	} {
		if r.Take(tc.ss, tc.req, extra) != nil {
			t.Errorf("%s: taken", tc.name)
		}
	}
}

// TestRun: answers as the server's connection gets them, and cancellation.
// (That the bytes equal the server's is streamhttp's
// TestDirectMatchesServer.)
func TestRun(t *testing.T) {
	legacy, _ := sessions(t, "2025-11-25")
	started := make(chan struct{})
	handler := func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		switch req.(*mcp.CallToolRequest).Params.Name {
		case "empty":
			return &mcp.CallToolResult{}, nil
		case "fail":
			return nil, &jsonrpc.Error{Code: 42, Message: "no"}
		case "nil":
			return nil, nil
		case "wait":
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, errors.New("plain")
	}
	r := New(context.Background(), handler)
	answer := func(name string) *jsonrpc.Response {
		t.Helper()
		c := r.Take(legacy, request(t, name, "tools/call", `{"name":"`+name+`"}`), nil)
		if c == nil {
			t.Fatalf("%s not taken", name)
		}
		var got *jsonrpc.Response
		r.Run(c, func(ctx context.Context, resp *jsonrpc.Response) {
			if ctx.Err() != nil {
				t.Errorf("%s: written with a done context", name)
			}
			got = resp
		})
		return got
	}
	if got := answer("empty"); string(got.Result) != `{"content":[]}` || got.Error != nil {
		t.Errorf("empty content: %s %v", got.Result, got.Error)
	}
	var werr *jsonrpc.Error
	if got := answer("fail"); !errors.As(got.Error, &werr) || werr.Code != 42 {
		t.Errorf("JSON-RPC error: %v", got.Error)
	}
	if got := answer("nil"); !errors.As(got.Error, &werr) || werr.Code != jsonrpc.CodeInternalError {
		t.Errorf("no result and no error: %v", got.Error)
	}
	if got := answer("other"); got.Error == nil || got.Error.Error() != "plain" {
		t.Errorf("plain error: %v", got.Error)
	}

	// notifications/cancelled naming the call cancels it; its answer is
	// still written.
	c := r.Take(legacy, request(t, float64(9), "tools/call", `{"name":"wait"}`), nil)
	done := make(chan *jsonrpc.Response)
	go r.Run(c, func(_ context.Context, resp *jsonrpc.Response) { done <- resp })
	<-started
	r.Cancelled(request(t, nil, "notifications/cancelled", `{"requestId":8}`))
	select {
	case <-done:
		t.Fatal("another ID's cancellation ended the call")
	case <-time.After(50 * time.Millisecond):
	}
	r.Cancelled(request(t, nil, "notifications/cancelled", `{"requestId":9,"reason":"x"}`))
	select {
	case got := <-done:
		if got.Error == nil || !strings.Contains(got.Error.Error(), "context canceled") {
			t.Errorf("cancelled call answered %v", got.Error)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancellation did not end the call")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r.Wait(ctx)
	if ctx.Err() != nil {
		t.Error("Wait did not return with no call running")
	}
}

// FuzzAppendTextResult: a text-only result written by hand is
// MarshalJSON's bytes exactly; anything else is left to MarshalJSON.
func FuzzAppendTextResult(f *testing.F) {
	f.Add("hi", "", false, false)
	f.Add("<a & b>\n\t\"q\" \\ \u2028 \u2029 \x7f \x00 \xff é 😀", "second", true, false)
	f.Add("", "", false, true)
	f.Fuzz(func(t *testing.T, a, b string, isError, meta bool) {
		r := &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: a}}}
		if b != "" {
			r.Content = append(r.Content, &mcp.TextContent{Text: b})
		}
		if meta {
			r.Content = append(r.Content, &mcp.TextContent{Text: b, Meta: mcp.Meta{"k": a}})
		}
		want, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got := appendTextResult(nil, r)
		if meta {
			if got != nil {
				t.Fatalf("content with _meta written by hand: %s", got)
			}
			return
		}
		if string(got) != string(want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
		if m, err := marshal(r); err != nil || string(m) != string(want) {
			t.Fatalf("marshal: %s, %v", m, err)
		}
	})
}

// TestAppendTextResultLeaves: what the hand-written path leaves to
// MarshalJSON.
func TestAppendTextResultLeaves(t *testing.T) {
	text := []mcp.Content{&mcp.TextContent{Text: "x"}}
	for name, r := range map[string]*mcp.CallToolResult{
		"no content":         {},
		"structured content": {Content: text, StructuredContent: map[string]any{"a": 1}},
		"result _meta":       {Content: text, Meta: mcp.Meta{"k": "v"}},
		"annotations":        {Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}},
		"an image":           {Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
	} {
		if got := appendTextResult(nil, r); got != nil {
			t.Errorf("%s: written by hand: %s", name, got)
		}
		want, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := marshal(r); err != nil || string(got) != string(want) {
			t.Errorf("%s: marshal %s, want %s", name, got, want)
		}
	}
}
