package dispatch

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// appendTextResult appends r as CallToolResult.MarshalJSON writes it, for
// the common shape of a forwarded answer: text content without _meta or
// annotations, structured content of JSON's own types (as a decoder makes
// it, appendValue), and no other field but isError. nil for any other
// result, which MarshalJSON then writes. It spares the reflection of
// json.Marshal and the copy of every text it makes, and writes <, > and &
// as themselves where json.Marshal escapes them: the answer is JSON, never
// HTML, and a wrapped result's twelve marker brackets would otherwise cost
// five bytes each on the wire and an unescaping decode in every client
// (FuzzAppendTextResult compares the bytes with MarshalJSON's, its HTML
// escapes read as the characters). With server (switchboard's Implementation,
// encoded), it is a 2026-07-28 answer as the session would finish it
// (modernResult, completeType): resultType "complete" first, then _meta
// naming the server; the session passes it as it is.
func appendTextResult(dst []byte, r *mcp.CallToolResult, server json.RawMessage) []byte {
	if r.Meta != nil || r.InputRequests != nil || r.RequestState != "" || r.NeedsInput() || r.Content == nil {
		return nil
	}
	size := len(typedHead) + len(server) + 32
	for _, c := range r.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
			return nil
		}
		// The envelope, the text, and room for escapes (line breaks,
		// quotes).
		size += 32 + len(t.Text) + len(t.Text)/8
	}
	if cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	if server != nil {
		dst = append(append(dst, typedHead...), server...)
		dst = append(dst, `},"content":[`...)
	} else {
		dst = append(dst, `{"content":[`...)
	}
	for i, c := range r.Content {
		t := c.(*mcp.TextContent)
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst = appendString(dst, t.Text)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if r.StructuredContent != nil {
		var ok bool
		if dst, ok = appendValue(append(dst, `,"structuredContent":`...), r.StructuredContent); !ok {
			return nil
		}
	}
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}')
}

// typedHead opens a 2026-07-28 text result, up to the server's info.
const typedHead = `{"resultType":"complete","_meta":{"` + mcp.MetaKeyServerInfo + `":`

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string as encoding/json writes it
// without HTML escaping (an Encoder after SetEscapeHTML(false)): invalid
// UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped, <, > and & as they
// are.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendArgs appends arguments as decodeArgs returns them (objects,
// arrays, strings, json.Number, booleans, null) as an Encoder after
// SetEscapeHTML(false) writes them (appendValue). What it forwards is what
// was validated, read back by one parser (DESIGN §7), without the
// reflection and the sorted copy of every map that json.Marshal makes. A
// value of another type (none comes from decodeArgs) is left to such an
// Encoder. FuzzAppendArgs compares the bytes with the Encoder's.
func appendArgs(dst []byte, v any) ([]byte, error) {
	if b, ok := appendValue(dst, v); ok {
		return b, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// appendValue appends v as an Encoder after SetEscapeHTML(false) writes
// it, for the types a JSON decoder makes into an any: objects (keys in
// byte order, as encoding/json sorts them), arrays, strings (appendString),
// float64 and json.Number, booleans and nil; a nil map or slice is null,
// as encoding/json writes it. false for any other type, and for what
// encoding/json refuses (a NaN or an infinity, a json.Number that is not
// one number): the caller leaves those to encoding/json. What it appended
// is then garbage past dst's length.
func appendValue(dst []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return append(dst, "null"...), true
		}
		return appendObject(dst, t)
	case []any:
		if t == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendValue(dst, e); !ok {
				return nil, false
			}
		}
		return append(dst, ']'), true
	case string:
		return appendString(dst, t), true
	case float64:
		return appendFloat(dst, t)
	case json.Number:
		if t == "" {
			return append(dst, '0'), true // as encoding/json writes it
		}
		if !isNumber(t) {
			return nil, false
		}
		return append(dst, t...), true
	case bool:
		if t {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case nil:
		return append(dst, "null"...), true
	}
	return nil, false
}

// appendObject appends m with its keys in byte order, as encoding/json
// sorts them.
func appendObject(dst []byte, m map[string]any) ([]byte, bool) {
	var room [8]string
	keys := room[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, k), ':')
		var ok bool
		if dst, ok = appendValue(dst, m[k]); !ok {
			return nil, false
		}
	}
	return append(dst, '}'), true
}

// appendFloat appends f as encoding/json writes a float64: the shortest
// form that reads back as f, in exponent form below 1e-6 and from 1e21 on
// (as ECMAScript writes numbers), the exponent without a leading zero.
// false for a NaN or an infinity, which encoding/json refuses.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// isNumber is whether n is one JSON number and nothing else: a valid JSON
// value that begins with a minus or a digit and ends with a digit.
func isNumber(n json.Number) bool {
	first, last := n[0], n[len(n)-1]
	return (first == '-' || first >= '0' && first <= '9') && last >= '0' && last <= '9' && json.Valid([]byte(n))
}
