// Package direct answers a downstream session's tools/call requests
// without the go-sdk's server session, for switchboard's own downstream
// transports (streamable HTTP, stdio).
//
// The server session decodes a call's parameters twice more (its _meta
// check, then the parameter type, each with a fresh 32 KiB decoder
// buffer), takes the server's lock to find the tool and runs the handler
// on a goroutine of its own. A Runner reads the parameters once into the
// same request type and runs the handler the server would run — the
// server's receiving middleware around the tool's handler, which the
// caller composes — then writes the answer byte for byte as the server's
// connection would. It takes only what it can read as the server would:
// sessions before protocol 2026-07-28 that are initialized, and parameters
// without the 2026 protocol's fields; the rest goes to the server.
//
// It imports nothing of this module.
package direct

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

const (
	methodCallTool  = "tools/call"
	methodCancelled = "notifications/cancelled"
	v20260728       = "2026-07-28"
)

// parseFlags: field names match exactly, as in the SDK's decoder; strings
// and raw values alias the message, which the request keeps.
const parseFlags = sjson.DontMatchCaseInsensitiveStructFields | sjson.DontCopyRawMessage | sjson.DontCopyString

// A Runner answers one session's tools/call requests.
type Runner struct {
	handler mcp.MethodHandler
	ctx     context.Context

	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[jsonrpc.ID]context.CancelFunc
}

// New returns a Runner answering with handler; the calls' contexts derive
// from ctx (values kept; they end when ctx does).
func New(ctx context.Context, handler mcp.MethodHandler) *Runner {
	return &Runner{handler: handler, ctx: ctx, running: map[jsonrpc.ID]context.CancelFunc{}}
}

// A Call is a tools/call the runner took.
type Call struct {
	id     jsonrpc.ID
	req    *mcp.CallToolRequest
	ctx    context.Context
	cancel context.CancelFunc
}

// Take takes req when the runner may answer it, as the request the server
// would hand the tool; the caller must then Run it. nil leaves req to the
// server: not a tools/call, no session or one not initialized or of the
// 2026 protocol, parameters of the 2026 protocol (a per-request protocol
// version, multi-round-trip fields), parameters that do not decode (the
// server words that error), or an ID already in flight. extra is the
// request's transport information, as the server would get it.
func (r *Runner) Take(ss *mcp.ServerSession, req *jsonrpc.Request, extra *mcp.RequestExtra) *Call {
	if r == nil || ss == nil || req.Method != methodCallTool || !req.IsCall() || len(req.Params) == 0 || req.Params[0] != '{' {
		return nil
	}
	ip := ss.InitializeParams()
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
	c := &Call{id: req.ID, req: &mcp.CallToolRequest{Session: ss, Params: p, Extra: extra}}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, busy := r.running[req.ID]; busy {
		return nil
	}
	// Registered now, so that a cancellation right behind the call finds it.
	c.ctx, c.cancel = context.WithCancel(r.ctx)
	r.running[req.ID] = c.cancel
	r.wg.Add(1)
	return c
}

// Run answers a taken call and hands the answer to write, as the server's
// connection would get it: an error as the SDK's jsonrpc2 words it, else
// the result (empty content as [], as the server sends it). It returns
// once write returned.
//
// The handler gets the call's context, which a notifications/cancelled
// naming the call (Cancelled) or the end of the runner's context cancels.
func (r *Runner) Run(c *Call, write func(context.Context, *jsonrpc.Response)) {
	defer func() {
		c.cancel()
		r.mu.Lock()
		delete(r.running, c.id)
		r.mu.Unlock()
		r.wg.Done()
	}()
	resp := &jsonrpc.Response{ID: c.id}
	res, err := r.handler(c.ctx, methodCallTool, c.req)
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
	// Written even when the call was cancelled, as the SDK's jsonrpc2 does
	// (with a context that is not done, or a connection would refuse it).
	write(context.WithoutCancel(c.ctx), resp)
}

// Wait waits for the calls being answered, until ctx ends.
func (r *Runner) Wait(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Cancelled cancels the call a notifications/cancelled names, if the
// runner answers it. The notification should go on to the server too,
// which ignores IDs it does not run.
func (r *Runner) Cancelled(req *jsonrpc.Request) {
	if r == nil || req.Method != methodCancelled || len(req.Params) == 0 {
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
	r.mu.Lock()
	cancel := r.running[id]
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// marshal encodes a result as the SDK's jsonrpc2 does (an encoder without
// HTML escaping). A result with its own MarshalJSON (CallToolResult's
// calls json.Marshal) is taken as that method writes it: the encoder would
// only compact it again, to the same bytes. A text-only CallToolResult is
// written without reflection, to the same bytes again.
func marshal(v any) (json.RawMessage, error) {
	if r, ok := v.(*mcp.CallToolResult); ok {
		if b := appendTextResult(nil, r); b != nil {
			return b, nil
		}
	}
	if m, ok := v.(json.Marshaler); ok {
		return m.MarshalJSON()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
