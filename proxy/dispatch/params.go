package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

// strict is how params are decoded: keys match exactly, as the go-sdk and
// the session's own reading of them (session.PeekParams) match them, so
// that no two readers of one request see two names ("name" and "NAME").
const strict = sjson.DontMatchCaseInsensitiveStructFields

// decodeParams decodes a request's params; none decode as the zero value.
func decodeParams(r *session.Request, dst any) error {
	if len(r.Params) == 0 || string(r.Params) == "null" {
		return nil
	}
	rest, err := sjson.Parse(r.Params, dst, strict)
	if err == nil && wire.Trailing(rest) {
		err = errors.New("invalid character after top-level value")
	}
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: invalid params: %v", r.Method, err)}
	}
	return nil
}

// decodeCallParams is decodeParams for tools/call, on every forwarded
// call's path: the segmentio decoder reads the params in one pass, without
// encoding/json's reflection (about 3 µs of a forwarded call at c = 8;
// 7565e0a decoded them so too). Strings and raw values are copied as
// json.Unmarshal copies them; field names match exactly (strict). _meta's
// io.modelcontextprotocol/* keys are left out undecoded: the session read
// them (a 2026-07-28 client's version, capabilities and info), and no
// upstream gets them (forwardableMeta).
func decodeCallParams(r *session.Request, dst *mcp.CallToolParamsRaw) error {
	if len(r.Params) == 0 || string(r.Params) == "null" {
		return nil
	}
	var p callParams
	rest, err := sjson.Parse(r.Params, &p, strict)
	if err == nil && wire.Trailing(rest) {
		err = errors.New("invalid character after top-level value")
	}
	if err == nil {
		*dst = mcp.CallToolParamsRaw{Name: p.Name, Arguments: p.Arguments, InputResponses: p.InputResponses, RequestState: p.RequestState}
		dst.Meta, err = p.meta()
	}
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: invalid params: %v", r.Method, err)}
	}
	return nil
}

// callParams is mcp.CallToolParamsRaw with _meta raw.
type callParams struct {
	Meta           aliased              `json:"_meta"`
	Name           string               `json:"name"`
	Arguments      json.RawMessage      `json:"arguments"`
	InputResponses mcp.InputResponseMap `json:"inputResponses"`
	RequestState   string               `json:"requestState"`
}

// meta decodes the _meta values a call keeps (see decodeCallParams): a
// tokenizer walks the object's keys without allocating, and only the
// values kept are decoded. As encoding/json into a map: null is none, a
// key given twice keeps its last value, and anything but an object is an
// error.
func (p *callParams) meta() (mcp.Meta, error) {
	if len(p.Meta) == 0 || string(p.Meta) == "null" {
		return nil, nil
	}
	raw := p.Meta
	tk := sjson.NewTokenizer(raw)
	if !tk.Next() || tk.Delim != '{' {
		return nil, errors.New("_meta: not an object")
	}
	m := mcp.Meta{}
	for tk.Next() {
		if !tk.IsKey || tk.Depth != 1 {
			continue
		}
		key := tk.String() // a string only when kept: most keys are the protocol's
		tk.Next()          // the colon
		if !tk.Next() {
			break
		}
		start := len(raw) - tk.Remaining() - len(tk.Value)
		if open := tk.Delim; open == '{' || open == '[' {
			for depth := tk.Depth; tk.Next(); {
				if tk.Depth == depth && (tk.Delim == '}' || tk.Delim == ']') {
					break
				}
			}
		}
		if bytes.HasPrefix(key, []byte(metaPrefix)) {
			continue
		}
		var v any
		if err := sjson.Unmarshal(raw[start:len(raw)-tk.Remaining()], &v); err != nil {
			return nil, err
		}
		m[string(key)] = v
	}
	if tk.Err != nil {
		return nil, tk.Err
	}
	return m, nil
}

// aliased is a raw value that aliases the params it was read from, for
// what is read at once and not kept (a call's _meta: meta decodes the
// values it keeps, and most of it is the protocol's keys, never copied).
type aliased []byte

func (a *aliased) UnmarshalJSON(b []byte) error {
	*a = b
	return nil
}

// metaPrefix starts the _meta keys the protocol reserves for itself.
const metaPrefix = "io.modelcontextprotocol/"
