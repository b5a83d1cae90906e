package dispatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// FuzzArgsDecode: duplicate keys and keys that differ only in case are
// always rejected, and what is accepted re-encodes to an object that
// decodes to the same value.
func FuzzArgsDecode(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":[1,2,{"d":null}]}}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"Key":1,"key":2}`))
	f.Add([]byte(`{"n":12345678901234567890}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := decodeArgs(raw)
		if err != nil {
			return
		}
		if dupOrCaseKeys(raw) {
			t.Fatalf("accepted duplicate or case-variant keys: %s", raw)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := decodeArgs(b)
		if err != nil {
			t.Fatalf("re-encoded arguments do not decode: %v", err)
		}
		b2, _ := json.Marshal(m2)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the value: %s -> %s", b, b2)
		}
	})
}

// dupOrCaseKeys is a reference check written against encoding/json's token
// stream: does any object hold two keys equal under case folding?
func dupOrCaseKeys(raw []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	type frame struct {
		obj    bool
		keys   map[string]bool
		expect bool // next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expect {
			if k, ok := tok.(string); ok {
				fk := strings.ToLower(k)
				if top.keys[fk] {
					return true
				}
				top.keys[fk] = true
				top.expect = false
				continue
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				if top != nil && top.obj {
					top.expect = true
				}
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, expect: true})
				continue
			case '[':
				if top != nil && top.obj {
					top.expect = true
				}
				stack = append(stack, &frame{})
				continue
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].expect = true
		}
	}
}

// FuzzDecodeCallParams: tools/call params decode as every other method's
// (decodeParams): the same acceptance, and the same name, arguments and
// _meta (less the io.modelcontextprotocol/* keys, which decodeCallParams
// leaves out). Both match keys exactly: "NAME" is not the name. Params
// with no key that matches a field only in another case decode as
// encoding/json decodes them too.
func FuzzDecodeCallParams(f *testing.F) {
	f.Add([]byte(`{"name":"mcp_f_echo","NAME":"mcp_f_elicit","Name":"x"}`))
	f.Add([]byte(`{"NAME":"x"}`))
	f.Add([]byte(`{"name":"mcp_echo_echo","arguments":{"text":"hi"}}`))
	f.Add([]byte(`{"NAME":"x","Arguments":[1,2],"_meta":{"progressToken":7}}`))
	f.Add([]byte(`{"name":"a\u0000b","arguments":null}`))
	f.Add([]byte(`{"name":1}`))
	f.Add([]byte(`{"name":"x"} trailing`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{}},"trace":"t","io.modelcontextprotocol/x":[}}`))
	f.Add([]byte(`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","k":{"a":[1,2.5e3,null]}}}`))
	f.Add([]byte(`{"name":"x","_meta":{"k":1,"k":{"x":[]},"io.modelcontextprotocol\u002fv":{},"\u006b2":[[],{}]}}`))
	f.Add([]byte(`{"name":"x","_meta":[1]}`))
	f.Add([]byte(`{"name":"x","_meta":null,"_META":{"a":"b"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got, want mcp.CallToolParamsRaw
		gerr := decodeCallParams(&session.Request{Method: "tools/call", Params: raw}, &got)
		werr := decodeParams(&session.Request{Method: "tools/call", Params: raw}, &want)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: accepted by one decoder only: %v, %v", raw, gerr, werr)
		}
		if gerr != nil {
			return
		}
		for k := range want.Meta {
			if strings.HasPrefix(k, metaPrefix) {
				delete(want.Meta, k)
			}
		}
		g, _ := json.Marshal(&got)
		w, _ := json.Marshal(&want)
		if string(g) != string(w) {
			t.Fatalf("%q decodes to %s, decodeParams to %s", raw, g, w)
		}
		if name, ok := exactName(raw); ok && got.Name != name {
			t.Fatalf("%q: name %q, want the value of its exact key \"name\", %q", raw, got.Name, name)
		}
		if !foldedKey(raw) {
			var std mcp.CallToolParamsRaw
			if err := json.Unmarshal(raw, &std); err == nil {
				for k := range std.Meta {
					if strings.HasPrefix(k, metaPrefix) {
						delete(std.Meta, k)
					}
				}
				if s, _ := json.Marshal(&std); string(s) != string(g) {
					t.Fatalf("%q decodes to %s, encoding/json to %s", raw, g, s)
				}
			}
		}
	})
}

// callFields are the keys of tools/call params.
var callFields = []string{"name", "arguments", "_meta", "inputResponses", "requestState"}

// foldedKey reports whether raw, a JSON object, has a key that matches a
// field of tools/call params only in another letter case (which
// encoding/json would take for it).
func foldedKey(raw []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for k := range m {
		for _, f := range callFields {
			if strings.EqualFold(k, f) && k != f {
				return true
			}
		}
	}
	return false
}

// exactName is the last value of raw's exact key "name", if it is a
// string.
func exactName(raw []byte) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m["name"] == nil {
		return "", false
	}
	var s string
	return s, json.Unmarshal(m["name"], &s) == nil
}
