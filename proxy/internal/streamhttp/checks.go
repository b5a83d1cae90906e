package streamhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
)

// The checks of a request's headers against its body that protocol
// 2026-07-28 asks of the transport: SEP-2575's protocol version, SEP-2243's
// Mcp-Name.

// namedMethods are the methods whose Mcp-Name header names what the
// request is about, and the param that holds it.
// (SEP-2663 adds the tasks methods, named by their taskId.)
var namedMethods = map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
	"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}

// peeked is what the transport reads of a request's params, in one pass
// when it reads any: the protocol version _meta names (SEP-2575) and what
// the request is about (SEP-2243). The session is handed what was read
// (session.Extra), and does not read it again.
type peeked struct {
	params json.RawMessage
	read   bool
	err    error
	p      session.Peek
}

func (pk *peeked) get() error {
	if !pk.read {
		pk.read = true
		pk.err = session.PeekParams(pk.params, &pk.p)
	}
	return pk.err
}

// peek is what was read for the session (nil: nothing, or not an object).
func (pk *peeked) peek() *session.Peek {
	if !pk.read || pk.err != nil {
		return nil
	}
	return &pk.p
}

// checkName applies SEP-2243's Mcp-Name to a 2026-07-28 request: it is
// what params name, byte for byte. It returns what is wrong ("": nothing).
func checkName(h http.Header, req *jsonrpc.Request, pk *peeked) string {
	field, ok := namedMethods[req.Method]
	if !ok {
		return ""
	}
	got := h.Get(nameHeader)
	if got == "" {
		return fmt.Sprintf("missing required Mcp-Name header for method %q", req.Method)
	}
	err := pk.get()
	named := pk.p.Name
	switch field {
	case "uri":
		named = pk.p.URI
	case "taskId":
		named = pk.p.TaskID
	}
	if err == nil && session.Plain(named, got) {
		return "" // the common case, without a string made of the body's
	}
	want, ok := session.String(named)
	if err != nil || !ok {
		return fmt.Sprintf("params of %q name no %s for the Mcp-Name header to match", req.Method, field)
	}
	if got != want {
		return fmt.Sprintf("header mismatch: Mcp-Name header value '%s' does not match body value '%s'", got, want)
	}
	return ""
}

// checkNewProtocol applies SEP-2575 to one request: a request of protocol
// 2026-07-28 or later (modern) names a version this server serves, in the
// header and in _meta alike. It writes the refusal itself (ok false).
func checkNewProtocol(w http.ResponseWriter, req *jsonrpc.Request, pk *peeked, header, version string) (modern, ok bool) {
	if !req.IsCall() {
		return false, true // _meta's version is for requests only
	}
	metaVersion := metaProtocolVersion(pk, header >= v20260728)
	if version < v20260728 && metaVersion < v20260728 {
		return false, true // legacy, whatever _meta says of it
	}
	switch {
	case header == "":
		writeError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: fmt.Sprintf("%s header is required for requests carrying %q", protocolVersionHeader, mcp.MetaKeyProtocolVersion)})
	case metaVersion == "":
		writeError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyProtocolVersion)})
	case header != metaVersion:
		writeError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: fmt.Sprintf("%s header %q does not match request %s %q", protocolVersionHeader, header, mcp.MetaKeyProtocolVersion, metaVersion)})
	case !slices.Contains(session.ModernVersions, metaVersion):
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: session.AllVersions, Requested: metaVersion})
		writeError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{
			Code:    mcp.CodeUnsupportedProtocolVersion,
			Message: fmt.Sprintf("protocol version %q is not supported by this server", metaVersion),
			Data:    data,
		})
	default:
		return true, true
	}
	return false, false
}

// metaProtocolVersion is params._meta's protocol version, if it is a string.
// Params are decoded only when the key is in them at all, or expected
// (the header names 2026-07-28 or later: the session reads them anyway).
func metaProtocolVersion(pk *peeked, expected bool) string {
	if !expected && !bytes.Contains(pk.params, []byte(mcp.MetaKeyProtocolVersion)) || pk.get() != nil {
		return ""
	}
	v, _ := pk.p.Version()
	return v
}
