package mrtr

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// TestRequestStateSeal: a sealed state opens only as written, for the
// binding it was sealed to; every one-character change is refused.
func TestRequestStateSeal(t *testing.T) {
	pc := New()
	for _, tc := range []struct {
		name   string
		sealed string
		open   func(string, string) bool
	}{
		{"parked", pc.seal("call-id", 3, "bind"), func(s, b string) bool {
			id, round, ok := pc.open(s, b)
			return ok && id == "call-id" && round == 3
		}},
		{"upstream", func() string {
			res := inputRequiredResult("the server's state")
			pc.sealUpstream(res, &binding{v: "bind"})
			return res.RequestState
		}(), func(s, b string) bool {
			state, ok := pc.openUpstream(s, b)
			return ok && state == "the server's state"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.open(tc.sealed, "bind") {
				t.Fatalf("%q does not open", tc.sealed)
			}
			if tc.open(tc.sealed, "another caller") {
				t.Error("opens for another binding")
			}
			for i := range len(tc.sealed) {
				for _, c := range []byte{'A', 'B', '.', '_', '-'} {
					if tc.sealed[i] == c {
						continue
					}
					altered := tc.sealed[:i] + string(c) + tc.sealed[i+1:]
					if tc.open(altered, "bind") {
						t.Fatalf("%q (character %d changed) opens", altered, i)
					}
				}
			}
			if tc.open(tc.sealed+"A", "bind") || tc.open(strings.TrimSuffix(tc.sealed, tc.sealed[len(tc.sealed)-1:]), "bind") {
				t.Error("a longer or shorter state opens")
			}
		})
	}
	if _, _, ok := pc.open(pc.seal("x", 1, "bind"), "bind"); !ok {
		t.Fatal("round 1 does not open")
	}
	if _, ok := pc.openUpstream(pc.seal("x", 1, "bind"), "bind"); ok {
		t.Error("a parked call's state opens as an upstream's")
	}
	if _, _, ok := New().open(pc.seal("x", 1, "bind"), "bind"); ok {
		t.Error("a state opens under another process's key")
	}
}

// FuzzRequestState: no state a client makes up opens, and none panics.
func FuzzRequestState(f *testing.F) {
	pc := New()
	f.Add("p.abc.1.AAAA")
	f.Add("u.c3RhdGU.AAAA")
	f.Add(pc.seal("id", 1, "bind") + "x")
	f.Fuzz(func(t *testing.T, s string) {
		if _, _, ok := pc.open(s, "bind"); ok {
			t.Fatalf("%q opens", s)
		}
		if _, ok := pc.openUpstream(s, "bind"); ok {
			t.Fatalf("%q opens as an upstream's", s)
		}
	})
}

// inputRequiredResult is an upstream's input_required tool result with
// state.
func inputRequiredResult(state string) *mcp.CallToolResult {
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"input_required","inputRequests":{},"requestState":`+strconv.Quote(state)+`}`), &res); err != nil {
		panic(err)
	}
	return &res
}

// TestRetryParamsPeeked: what the transport read of params (session.Peek)
// spares the search for a retry's fields, and changes no answer.
func TestRetryParamsPeeked(t *testing.T) {
	for _, params := range []string{
		`{"name":"t","arguments":{"x":1}}`,
		`{"name":"t","requestState":"s1","inputResponses":{"k":{"action":"accept"}}}`,
		`{"name":"t","inputResponses":{"k":{}}}`,
		`{"name":"t","requestState":null}`,
		`{"name":"t","arguments":{"requestState":"nested, not a retry"}}`,
		`{"name":"t","RequestState":"s"}`,
		`{"name":"t","requestState":7}`,
	} {
		var pk session.Peek
		if err := session.PeekParams(json.RawMessage(params), &pk); err != nil {
			t.Fatalf("%s: %v", params, err)
		}
		want, werr := retryParams(json.RawMessage(params), nil)
		got, gerr := retryParams(json.RawMessage(params), &pk)
		if got.State != want.State || len(got.Responses) != len(want.Responses) || (gerr == nil) != (werr == nil) {
			t.Errorf("%s: peeked %+v, %v; read %+v, %v", params, got, gerr, want, werr)
		}
	}
}

// caller is a principal that names its caller (Caller).
type caller string

func (c caller) Caller() string { return string(c) }

// TestBindingExactKeys: what a state is bound to reads the call's name
// with exact key case, as the call itself is decoded: "NAME" and "Name"
// are not the name, and cannot bind a state to another call.
func TestBindingExactKeys(t *testing.T) {
	ss := session.New(session.Options{Principal: caller("c")}, nil)
	defer ss.Close()
	bind := func(params string) string {
		return bindingOf(&session.Request{Session: ss, Params: json.RawMessage(params)}, "tools/call")
	}
	if a, b := bind(`{"name":"mcp_f_echo"}`), bind(`{"name":"mcp_f_echo","NAME":"mcp_f_elicit","Name":"x"}`); a != b {
		t.Errorf("keys in another case changed the binding: %q, %q", a, b)
	}
	if bind(`{"name":"mcp_f_echo"}`) == bind(`{"name":"mcp_f_elicit"}`) || bind(`{"uri":"a"}`) == bind(`{"URI":"b","uri":"c"}`) {
		t.Error("two calls share a binding")
	}
	rt, err := retryParams(json.RawMessage(`{"requestState":"p.x","REQUESTSTATE":"p.y"}`), nil)
	if err != nil || rt.State != "p.x" {
		t.Errorf("retry fields: %+v, %v; want the exact key's state", rt, err)
	}
}

// TestStateRefusesLineBreaks: the decoder skips CR and LF, so a state
// with one inserted in its signature would open as the state without; it
// is refused.
func TestStateRefusesLineBreaks(t *testing.T) {
	pc := New()
	st := pc.seal("x", 1, "bind")
	if _, _, ok := pc.open(st[:len(st)-4]+"\n"+st[len(st)-4:], "bind"); ok {
		t.Error("a state with a line break in its signature opens")
	}
	if _, _, ok := pc.open(st, "bind"); !ok {
		t.Fatal("the state does not open")
	}
}
