package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mcp-Param-* headers (SEP-2243): a 2026-07-28 tool's input schema may mark
// arguments with x-mcp-header, and its server expects each such argument's
// value in an HTTP header of that name too. switchboard computes them from
// the upstream's own schema (the downstream client sees the tool under
// another name and may send none): the bindings when the tools are
// listed, the values per call.

// paramBinding is one argument (a property path) and the header it goes in.
type paramBinding struct {
	path   []string
	header string
}

// toolParams are the bindings of the tools of cl's server, if it speaks
// 2026-07-28 (only such requests carry the headers).
func toolParams(cl *client, tools []*mcp.Tool) map[string][]paramBinding {
	if !cl.isModern() {
		return nil
	}
	return paramBindings(tools)
}

// paramBindings reads the x-mcp-header marks of each listed tool that has
// any; nil when none has.
func paramBindings(tools []*mcp.Tool) map[string][]paramBinding {
	var out map[string][]paramBinding
	for _, t := range tools {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil || !bytes.Contains(raw, []byte("x-mcp-header")) {
			continue
		}
		var s headerSchema
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		if b := s.bindings(nil, nil); len(b) > 0 {
			if out == nil {
				out = map[string][]paramBinding{}
			}
			out[t.Name] = b
		}
	}
	return out
}

// headerSchema is what of a schema the bindings need.
type headerSchema struct {
	XMCPHeader string                  `json:"x-mcp-header"`
	Properties map[string]headerSchema `json:"properties"`
}

func (s headerSchema) bindings(prefix []string, out []paramBinding) []paramBinding {
	for name, p := range s.Properties {
		path := append(append([]string(nil), prefix...), name)
		if p.XMCPHeader != "" {
			out = append(out, paramBinding{path: path, header: p.XMCPHeader})
		}
		out = p.bindings(path, out)
	}
	return out
}

// paramHeadersKey carries a call's bindings from CallTool to the HTTP
// transport.
type paramHeadersKey struct{}

// setParamHeaders sets the Mcp-Param-* headers of a tools/call from its
// params and the bindings ctx carries.
func setParamHeaders(ctx context.Context, h http.Header, params json.RawMessage) {
	bindings, _ := ctx.Value(paramHeadersKey{}).([]paramBinding)
	if len(bindings) == 0 {
		return
	}
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	for _, b := range bindings {
		if v, ok := headerValue(p.Arguments, b.path); ok {
			h.Set("Mcp-Param-"+b.header, v)
		}
	}
}

// headerValue is the header form of the argument at path: a string, a
// boolean or a safe integer, base64-wrapped when it is not plain visible
// ASCII; false for anything else or an argument that is not there.
func headerValue(args map[string]json.RawMessage, path []string) (string, bool) {
	raw, ok := args[path[0]]
	for _, part := range path[1:] {
		var obj map[string]json.RawMessage
		if !ok || json.Unmarshal(raw, &obj) != nil {
			return "", false
		}
		raw, ok = obj[part]
	}
	if !ok {
		return "", false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case bool:
		s = strconv.FormatBool(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53-1 {
			return "", false
		}
		s = strconv.FormatInt(int64(v), 10)
	default:
		return "", false
	}
	if plainHeader(s) {
		return s, true
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=", true
}

// plainHeader reports whether s goes in a header as it is: visible ASCII
// and inner spaces only, and not the base64 form's shape.
func plainHeader(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return false
	}
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?="))
}
