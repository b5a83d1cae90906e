package proxy

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRequestStateSeal: a sealed state opens only as written, for the
// binding it was sealed to; every one-character change is refused.
func TestRequestStateSeal(t *testing.T) {
	pc := newParkedCalls()
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
	if _, _, ok := newParkedCalls().open(pc.seal("x", 1, "bind"), "bind"); ok {
		t.Error("a state opens under another process's key")
	}
}

// FuzzRequestState: no state a client makes up opens, and none panics.
func FuzzRequestState(f *testing.F) {
	pc := newParkedCalls()
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
