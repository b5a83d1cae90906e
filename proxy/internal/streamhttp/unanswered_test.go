package streamhttp

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// callID is v as a request ID.
func callID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	i, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// TestUnanswered: one call's ID and a batch's IDs behave as one set: a
// duplicate is refused, 1 and "1" are two IDs, an answer takes its ID
// out, and the count says when the last is answered.
func TestUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"one call", 1}, {"a batch", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			u := expecting(tc.n)
			one, oneText := callID(t, float64(1)), callID(t, "1")
			if !u.add(one) || u.add(one) {
				t.Fatal("the first add of 1 must hold and the second be refused")
			}
			if u.has(oneText) || u.len() != 1 {
				t.Fatalf("\"1\" is another ID; len %d", u.len())
			}
			if !u.add(oneText) || !u.add(callID(t, "x")) || u.add(oneText) || u.len() != 3 {
				t.Fatalf("three IDs in, a duplicate refused: len %d", u.len())
			}
			u.remove(one)
			if u.has(one) || !u.has(oneText) || u.len() != 2 {
				t.Fatalf("after 1 is answered: has(1) %v, len %d", u.has(one), u.len())
			}
			u.remove(oneText)
			u.remove(callID(t, "x"))
			if u.len() != 0 || u.has(callID(t, "x")) {
				t.Fatalf("all answered, len %d", u.len())
			}
		})
	}
	t.Run("another ID's answer", func(t *testing.T) {
		u := expecting(1)
		two := callID(t, float64(2))
		u.add(two)
		u.remove(callID(t, float64(3)))
		if !u.has(two) || u.len() != 1 {
			t.Fatal("removing an ID that is not there took the lone one out")
		}
		u.remove(two)
		if u.has(two) || u.len() != 0 {
			t.Fatal("the lone call's answer did not take it out")
		}
	})
}
