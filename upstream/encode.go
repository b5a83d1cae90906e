package upstream

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream/wire"
)

// encodeParams encodes request parameters; nil params are sent as none.
func encodeParams(params mcp.Params) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	if p, ok := params.(*mcp.CallToolParams); ok {
		if b, err := appendCallToolParams(p); b != nil || err != nil {
			return b, err
		}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	return b, nil
}

// appendCallToolParams writes a forwarded call's params without
// json.Marshal's reflection over the struct and its second pass over the
// arguments: the name and the arguments, which the dispatcher encoded
// already (raw arguments must be JSON as an encoder wrote it: they are
// not checked again), and what _meta and inputResponses hold, each
// encoded on its own. The JSON is json.Marshal's, but that <, > and & in
// the name, the state and the arguments stay as they are. It returns nil,
// for json.Marshal to write, when the call is not that simple: arguments
// of another type, or raw arguments with a line break (which would end a
// stdio line), or a name or state that needs escaping.
func appendCallToolParams(p *mcp.CallToolParams) (json.RawMessage, error) {
	args, ok := p.Arguments.(json.RawMessage)
	if !ok || len(args) == 0 || !wire.Plain(p.Name) || (p.RequestState != "" && !wire.Plain(p.RequestState)) || bytes.ContainsAny(args, "\r\n") {
		return nil, nil
	}
	b := make([]byte, 0, len(args)+len(p.Name)+len(p.RequestState)+64)
	b = append(b, '{')
	if len(p.Meta) > 0 {
		meta, err := json.Marshal(map[string]any(p.Meta))
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, `"_meta":`...), meta...), ',')
	}
	b = append(append(append(b, `"name":"`...), p.Name...), `","arguments":`...)
	b = append(b, args...)
	if len(p.InputResponses) > 0 {
		in, err := json.Marshal(p.InputResponses)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"inputResponses":`...), in...)
	}
	if p.RequestState != "" {
		b = append(append(append(b, `,"requestState":"`...), p.RequestState...), '"')
	}
	return append(b, '}'), nil
}
