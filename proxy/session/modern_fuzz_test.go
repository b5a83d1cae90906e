package session

import (
	"encoding/json"
	"testing"
)

// FuzzModernOf: any params either are legacy, or name a served version
// with capabilities, or are refused with an error; none panics.
func FuzzModernOf(f *testing.F) {
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, params []byte) {
		e, err := modernOf(json.RawMessage(params))
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
