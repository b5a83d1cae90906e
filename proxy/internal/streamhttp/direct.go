package streamhttp

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

const (
	methodCallTool  = "tools/call"
	methodCancelled = "notifications/cancelled"
)

// parseFlags: field names match exactly, as in the SDK's decoder; strings
// and raw values alias the body, which the request keeps.
const parseFlags = sjson.DontMatchCaseInsensitiveStructFields | sjson.DontCopyRawMessage | sjson.DontCopyString

// directCall is req as the request the server would hand its tool, when the
// direct path may answer it; nil leaves req to the server: no direct
// handler, not a tools/call, a session not initialized or of the 2026
// protocol, parameters of the 2026 protocol (per-request _meta version,
// multi-round-trip fields), or parameters that do not decode (the server
// words that error).
func (c *conn) directCall(req *jsonrpc.Request) *mcp.CallToolRequest {
	if c.direct == nil || req.Method != methodCallTool || !req.IsCall() || len(req.Params) == 0 || req.Params[0] != '{' {
		return nil
	}
	ip := c.session.InitializeParams()
	if ip == nil || ip.ProtocolVersion >= v20260728 || bytes.Contains(req.Params, []byte(mcp.MetaKeyProtocolVersion)) {
		return nil
	}
	p := new(mcp.CallToolParamsRaw)
	if rest, err := sjson.Parse(req.Params, p, parseFlags); err != nil || len(bytes.TrimSpace(rest)) > 0 {
		return nil
	}
	if p.InputResponses != nil || p.RequestState != "" {
		return nil
	}
	return &mcp.CallToolRequest{Session: c.session, Params: p, Extra: req.Extra.(*mcp.RequestExtra)}
}

// runDirect answers a call registered on its stream through the direct
// handler, and writes the answer as the server's connection would: an
// error as the SDK's jsonrpc2 words it, else the result (empty content as
// [], as the server sends it).
func (c *conn) runDirect(cl *call, req *mcp.CallToolRequest) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	c.mu.Lock()
	cl.cancel = cancel
	c.mu.Unlock()

	resp := &jsonrpc.Response{ID: cl.id}
	res, err := c.direct(ctx, methodCallTool, req)
	if err == nil {
		switch ctr, _ := res.(*mcp.CallToolResult); {
		case ctr == nil:
			err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tools/call handler returned neither a result nor an error"}
		case ctr.Content == nil:
			cp := *ctr
			cp.Content = []mcp.Content{}
			resp.Result, err = marshal(&cp)
		default:
			resp.Result, err = marshal(ctr)
		}
	}
	resp.Error = err
	_ = c.Write(ctx, resp)
}

// marshal encodes a result as the SDK's jsonrpc2 does (no HTML escaping).
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// cancelDirect cancels the direct call a notifications/cancelled names.
// The notification goes on to the server too, which ignores IDs it does
// not run.
func (c *conn) cancelDirect(req *jsonrpc.Request) {
	if req.Method != methodCancelled || len(req.Params) == 0 {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if _, err := sjson.Parse(req.Params, &p, parseFlags); err != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	c.mu.Lock()
	var cancel context.CancelFunc
	if cl := c.calls[id]; cl != nil {
		cancel = cl.cancel
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
