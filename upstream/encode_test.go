package upstream

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sameJSON reports whether a and b hold the same JSON value, numbers
// compared as written.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	for _, x := range []struct {
		data []byte
		v    *any
	}{{a, &va}, {b, &vb}} {
		d := json.NewDecoder(bytes.NewReader(x.data))
		d.UseNumber()
		if err := d.Decode(x.v); err != nil {
			t.Fatalf("%s does not decode: %v", x.data, err)
		}
	}
	return reflect.DeepEqual(va, vb)
}

// TestAppendCallToolParams: a forwarded call's params are the JSON
// json.Marshal writes, or left to json.Marshal where they are not simple.
func TestAppendCallToolParams(t *testing.T) {
	tests := []struct {
		name string
		p    *mcp.CallToolParams
		fast bool // written by appendCallToolParams, not json.Marshal
	}{
		{"name and arguments", &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"hi"}`)}, true},
		{"html characters", &mcp.CallToolParams{Name: "a<b>&c", Arguments: json.RawMessage(`{"m":"<script>&"}`)}, true},
		{"meta", &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{"progressToken": "sb-1", "traceparent": "00-x"}}, true},
		{"empty meta is left out", &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{}}, true},
		{"retry", &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"a":[1,2.5e3]}`), RequestState: "state-1",
			InputResponses: mcp.InputResponseMap{"q": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}}}, true},
		{"unicode name", &mcp.CallToolParams{Name: "écho", Arguments: json.RawMessage(`{}`)}, false},
		{"quote in the state", &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{}`), RequestState: `a"b`}, false},
		{"line break in the arguments", &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage("{\n}")}, false},
		{"map arguments", &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"a": 1}}, false},
		{"no arguments", &mcp.CallToolParams{Name: "echo"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			fast, err := appendCallToolParams(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if (fast != nil) != tt.fast {
				t.Fatalf("written by appendCallToolParams: %v, want %v (%s)", fast != nil, tt.fast, fast)
			}
			got, err := encodeParams(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, got, want) {
				t.Errorf("encodeParams = %s\njson.Marshal = %s", got, want)
			}
			if bytes.ContainsAny(got, "\r\n") {
				t.Errorf("params %q hold a line break", got)
			}
		})
	}
}

// TestCallToolParamsFields fails when the SDK's CallToolParams gains a
// field appendCallToolParams does not write.
func TestCallToolParamsFields(t *testing.T) {
	known := map[string]bool{"Meta": true, "Name": true, "Arguments": true, "InputResponses": true, "RequestState": true}
	typ := reflect.TypeFor[mcp.CallToolParams]()
	for i := range typ.NumField() {
		if f := typ.Field(i); !known[f.Name] {
			t.Errorf("mcp.CallToolParams has a field %s that appendCallToolParams does not write", f.Name)
		}
	}
}

// FuzzAppendCallToolParams: for any name, arguments (as the dispatcher
// writes them: compact JSON), state and _meta value, the params are
// json.Marshal's JSON or left to it.
func FuzzAppendCallToolParams(f *testing.F) {
	f.Add("echo", []byte(`{"message":"hi"}`), "", "")
	f.Add("a<b", []byte(`{"m":"<\u2028>","n":[1,-0.5e-7,null,true]}`), "st", `"sb-1"`)
	f.Add("x", []byte(`{}`), `q"`, `{"a":[1]}`)
	f.Fuzz(func(t *testing.T, name string, args []byte, state, meta string) {
		var compact bytes.Buffer
		if json.Compact(&compact, args) != nil {
			return
		}
		p := &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(compact.Bytes()), RequestState: state}
		var mv any
		if meta != "" && json.Unmarshal([]byte(meta), &mv) == nil {
			p.Meta = mcp.Meta{"k": mv}
		}
		want, err := json.Marshal(p)
		if err != nil {
			return // the SDK's encoder refuses it too
		}
		got, err := encodeParams(p)
		if err != nil {
			t.Fatalf("encodeParams: %v (json.Marshal wrote %s)", err, want)
		}
		if !sameJSON(t, got, want) {
			t.Fatalf("encodeParams = %s\njson.Marshal = %s", got, want)
		}
	})
}

// BenchmarkEncodeCallParams: a forwarded call's params, as encodeParams
// writes them and as json.Marshal did.
func BenchmarkEncodeCallParams(b *testing.B) {
	p := &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"msg-12345","count":3,"tags":["a","b"]}`)}
	for _, bc := range []struct {
		name string
		enc  func(mcp.Params) ([]byte, error)
	}{
		{"encodeParams", func(p mcp.Params) ([]byte, error) { return encodeParams(p) }},
		{"json.Marshal", func(p mcp.Params) ([]byte, error) { return json.Marshal(p) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.enc(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
