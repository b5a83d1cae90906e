package dispatch

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExactNumber(t *testing.T) {
	for n, want := range map[string]bool{
		"10": true, "0.1": true, "-3.5e-7": true, "1e308": true, "9007199254740993": false,
		"9007199254740992": true, "1152921504606846976": true, "10.0000000000000001": false,
		"0.30000000000000004": true, "12345678901234567891": false, "1e400": false,
		"0.000000000000000000000000000000000001": true,
	} {
		if got := exactNumber(json.Number(n)); got != want {
			t.Errorf("exactNumber(%s) = %v, want %v", n, got, want)
		}
	}
	if _, err := decodeArgs(json.RawMessage(`{"limit": 10.0000000000000001}`)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("decodeArgs of an inexact number: %v, want an error naming the argument", err)
	}
}

// TestArgErrorPath: an error names where in the arguments it is.
func TestArgErrorPath(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":{"b":[1,{"c":1,"c":2}]}}`:        `arguments.a.b[1]: duplicate key "c"`,
		`{"a":1,"A":2}`:                        `arguments: keys "a" and "A" differ only in case`,
		`{"x":[1,2,10.0000000000000001]}`:      `arguments.x[2]: the number 10.0000000000000001`,
		`{"a":[[[]]],"b":{"c":{"C":1,"c":2}}}`: `arguments.b.c: keys "C" and "c" differ only in case`,
	} {
		_, err := decodeArgs(json.RawMessage(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("decodeArgs(%s) = %v, want %s…", in, err, want)
		}
	}
}
