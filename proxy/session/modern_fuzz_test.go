package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzModernOf: any params either are legacy, or name a served version
// with capabilities, or are refused with an error; none panics. Valid
// params are modern exactly when encoding/json finds a 2026-07-28 or
// later version string in their _meta.
func FuzzModernOf(f *testing.F) {
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte("{ \"_meta\" : { \"io.modelcontextprotocol/protocolVersion\" :\n \"2026-07-28\" , \"io.modelcontextprotocol/clientCapabilities\": {} } }"))
	f.Fuzz(func(t *testing.T, params []byte) {
		e, err := modernOf(json.RawMessage(params), nil)
		if json.Valid(params) {
			// Keys match exactly (encoding/json's struct fields would not).
			var p, meta map[string]json.RawMessage
			var v string
			want := json.Unmarshal(params, &p) == nil && json.Unmarshal(p["_meta"], &meta) == nil &&
				json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &v) == nil && v >= Modern
			if got := e != nil || err != nil; got != want {
				t.Fatalf("modern %v, encoding/json says %v (version %q)", got, want, v)
			}
		}
		switch {
		case e != nil && err != nil:
			t.Fatal("both an era and an error")
		case e != nil && (e.version != Modern || e.caps == nil):
			t.Fatalf("era %+v", e)
		case e != nil && e.level != "" && LevelRank(e.level) == len(levels):
			t.Fatalf("unknown level %q let through", e.level)
		}
	})
}

// FuzzString: String reads a JSON string as encoding/json does, and
// refuses any other value.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\"b"`, `"\u00e9"`, `7`, `null`, `""`, `"\ud800"`, `"é"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // the transport's decoder let only valid JSON through
		}
		got, ok := String(raw)
		var want string
		wantOK := json.Unmarshal(raw, &want) == nil && raw[0] == '"'
		if ok != wantOK || ok && got != want {
			t.Fatalf("String(%s) = %q, %v; encoding/json: %q, %v", raw, got, ok, want, wantOK)
		}
		// Plain never says yes wrongly, and says it for every plain
		// string: one whose value is its bytes between the quotes.
		if len(raw) >= 2 {
			inner := string(raw[1 : len(raw)-1])
			plain := Plain(raw, inner)
			if plain && (!wantOK || want != inner) {
				t.Fatalf("Plain(%s, %q) but encoding/json reads %q, %v", raw, inner, want, wantOK)
			}
			if !plain && wantOK && want == inner && !strings.Contains(inner, `\`) {
				t.Fatalf("Plain(%s, %q) = false for a plain string", raw, inner)
			}
		}
	})
}
