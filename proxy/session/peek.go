package session

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	sjson "github.com/segmentio/encoding/json"
)

// Extra is what a transport attaches to a request it hands a session
// (jsonrpc.Request.Extra), and what the request's handlers find in
// Request.Extra.
type Extra struct {
	// Header is the HTTP request's header (nil: not over HTTP).
	Header http.Header
	// Peek is what the transport read of the request's params for its
	// own checks (nil: nothing). The session reads the params again only
	// when it is nil.
	Peek *Peek
}

// Peek is what a request's params say beside the method's own fields:
// the protocol's keys in _meta (SEP-2575), what the request names
// (SEP-2243, Mcp-Name), and a retry's fields (SEP-2322), read only to
// know whether they are there. The values alias the params they were
// read from.
type Peek struct {
	Meta struct {
		Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		Info    json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
		Level   json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
	} `json:"_meta"`
	Name      json.RawMessage `json:"name"`
	URI       json.RawMessage `json:"uri"`
	TaskID    json.RawMessage `json:"taskId"`
	State     json.RawMessage `json:"requestState"`
	Responses json.RawMessage `json:"inputResponses"`
}

// PeekParams reads params in one pass, without reflection over what else
// they hold (a call's arguments are skipped, not copied). Keys match
// exactly, as JSON's do: "_Meta" is not _meta. Params must be valid JSON
// (the transport's decoder checked them); an error says they are not an
// object of the shape Peek reads.
func PeekParams(params json.RawMessage, pk *Peek) error {
	_, err := sjson.Parse(params, pk, sjson.ZeroCopy|sjson.DontMatchCaseInsensitiveStructFields)
	return err
}

// Version is the protocol version _meta names, if it names one as a
// string. A version served is the constant itself: no string is made.
func (pk *Peek) Version() (string, bool) {
	for _, v := range AllVersions {
		if Plain(pk.Meta.Version, v) {
			return v, true
		}
	}
	return String(pk.Meta.Version)
}

// Plain reports whether raw, a valid JSON value (as the transport's
// decoder let through), is s in quotes without escapes: then it is the
// JSON string s (valid UTF-8, which raw holds as is). False says nothing:
// s may still be raw's value, written with escapes.
func Plain(raw json.RawMessage, s string) bool {
	n := len(raw)
	return n == len(s)+2 && raw[0] == '"' && raw[n-1] == '"' && string(raw[1:n-1]) == s &&
		strings.IndexByte(s, '\\') < 0 && utf8.ValidString(s)
}

// String is the value of raw, a JSON value, if it is a string.
func String(raw json.RawMessage) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : n-1]), true // no escapes: the bytes are the value
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Peek is what the transport read of r's params (nil: nothing).
func (r *Request) Peek() *Peek { return peekOf(r.Extra) }

// peekOf is what the transport read of a request's params, if it did.
func peekOf(extra any) *Peek {
	if ex, ok := extra.(*Extra); ok && ex != nil {
		return ex.Peek
	}
	return nil
}
