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

// argsSamples are valid arguments that take decodeArgs' tokenizer path,
// with what encoding/json reads differently from a naive unquote:
// escapes, invalid UTF-8, lone surrogates, deep nesting.
var argsSamples = []string{
	`{"a":1,"b":{"c":[1,2,{"d":null}]},"e":true,"f":false,"g":"x"}`,
	`{"s":"tab\there \u00e9 \ud83d\ude00 \" \\ \/"}`,
	`{"lone":"\ud800x","bad":"` + "\xff\xfe" + `","mixed":"é` + "\xc3" + `"}`,
	`{"n":-0.5e-3,"m":12345678901234567890}`,
	`{"a":{"b":1},"A":{"b":1}}`,
	`{"k":[[[[]]]],"e":{},"l":[]}`,
	`{"a":1,"a":2}`,
	`{"x":{"Key":1,"key":2}}`,
	`{ "sp" : [ 1 , "2" , { } ] , "t" : null }`,
	`{"` + "\xe2\x80" + `":1}`,
}

// TestArgsTokenizerMatchesStream: the tokenizer path gives what
// encoding/json's token stream gives, value and error alike.
func TestArgsTokenizerMatchesStream(t *testing.T) {
	deep := strings.Repeat(`{"a":`, maxArgsDepth+1) + "1" + strings.Repeat("}", maxArgsDepth+1)
	for _, in := range append(argsSamples, deep) {
		checkArgsPaths(t, []byte(in))
	}
}

// FuzzArgsTokenizer: on every valid object the two decoders agree.
func FuzzArgsTokenizer(f *testing.F) {
	for _, s := range argsSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
			return
		}
		checkArgsPaths(t, raw)
	})
}

func checkArgsPaths(t *testing.T, raw []byte) {
	t.Helper()
	fast, ferr := decodeValid(raw)
	slow, serr := decodeStream(raw)
	if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
		t.Fatalf("%q: tokenizer error %v, stream error %v", raw, ferr, serr)
	}
	if ferr != nil {
		return
	}
	a, _ := json.Marshal(fast)
	b, _ := json.Marshal(slow)
	if string(a) != string(b) {
		t.Fatalf("%q: tokenizer read %s, stream read %s", raw, a, b)
	}
}
