package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// trust is the trust boundary as dispatch applies it: the sanitize
// options for a server's content, the mapping of upstream failures to what
// a client is told, and the counting and logging of what the boundary
// found. Everything an upstream sends downstream passes one of its
// methods.
type trust struct {
	redactor *secrets.Set
	log      hclog.Logger
	serving  *Serving
}

// toResult maps an error to the MCP reply, in one place (STYLE §4.6): an
// upstream problem the model can react to is an isError result, and so is
// the upstream's own JSON-RPC error, its message through the trust
// boundary (sanitize.Error) as a result's text would be (DESIGN §7, §12:
// a client shows tool errors to the model), but for a missing client
// capability (2026-07-28), which stays a protocol error; the caller going away is
// returned as is; anything else is an internal error with a generic
// message.
func (t *trust) toResult(ctx context.Context, err error, src sanitize.Source, opts sanitize.Options) (*mcp.CallToolResult, error) {
	var (
		we *jsonrpc.Error
		se *sanitize.SizeError
	)
	switch {
	case errors.As(err, &we) && we.Code == mcp.CodeMissingRequiredClientCapabilities:
		// The client must learn which capability it lacks, as the
		// protocol's error: no model can supply it.
		return nil, t.upstreamError(ctx, we, src, opts)
	case errors.As(err, &we):
		return errorResult(t.upstreamError(ctx, we, src, opts).Message), nil
	case errors.Is(err, upstream.ErrUnavailable), errors.As(err, &se):
		return errorResult(t.redact(err.Error())), nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, err
	}
	t.log.Error("internal error", "error", err)
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

func (t *trust) redact(s string) string {
	if t.redactor == nil {
		return s
	}
	return t.redactor.Redact(s)
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// logMessage decodes an upstream log message for a downstream session and
// passes it through the trust boundary. Nil when it does not decode or is
// withheld.
func (t *trust) logMessage(ctx context.Context, params json.RawMessage, src sanitize.Source, opts sanitize.Options) *mcp.LoggingMessageParams {
	var n mcp.LoggingMessageParams
	if json.Unmarshal(params, &n) != nil {
		return nil
	}
	out, rep := sanitize.LogMessage(&n, src, opts)
	t.noteFindings(ctx, src.Server, "", rep)
	return out
}

// askClient sends a server→client request to a downstream client (that
// declared caps) and
// returns its raw answer, bounded by the upstream's own deadline and five
// minutes.
//
// ask sends the request on the stream it belongs to: the calling request's
// stream during a call, the session's own stream outside one.
func (t *trust) askClient(ctx context.Context, caps *mcp.ClientCapabilities, ask func(context.Context, string, any) (json.RawMessage, error), method string, params json.RawMessage, src sanitize.Source, opts sanitize.Options) (json.RawMessage, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var prm any
	switch method {
	case "sampling/createMessage":
		if caps == nil || caps.Sampling == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the connected client does not support sampling"}
		}
		var in mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(params, &in); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "sampling/createMessage: " + err.Error()}
		}
		out, rep := sanitize.CreateMessageWithTools(&in, src, opts)
		t.noteFindings(ctx, src.Server, src.Tool+src.Prompt, rep)
		if out == nil {
			return nil, withheld(method)
		}
		prm = out
	case "elicitation/create":
		if caps == nil || caps.Elicitation == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the connected client does not support elicitation"}
		}
		var in mcp.ElicitParams
		if err := json.Unmarshal(params, &in); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create: " + err.Error()}
		}
		if mode := session.ElicitMode(&in); !session.CanElicit(caps, mode) {
			// A URL-mode elicitation goes only to a client that declared
			// URL mode, and a form to one that takes forms.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("server '%s' asks for %s-mode elicitation, which the connected client did not declare", src.Server, mode)}
		}
		out, rep := sanitize.Elicit(&in, src, opts)
		t.noteFindings(ctx, src.Server, src.Tool+src.Prompt, rep)
		if out == nil {
			return nil, withheld(method)
		}
		prm = out
	case "roots/list":
		if caps == nil || caps.RootsV2 == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the connected client does not support roots"}
		}
		prm = &mcp.ListRootsParams{}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "switchboard does not forward " + method}
	}
	return ask(rctx, method, prm)
}

// withheld refuses a server→client request the trust boundary blocked.
func withheld(method string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: method + ": withheld by switchboard: it matched suspicious patterns"}
}

// protocolError maps an upstream failure on a non-tool request to a JSON-RPC
// error (there is no isError result outside tools/call); an upstream's own
// JSON-RPC error passes the trust boundary.
func (t *trust) protocolError(ctx context.Context, err error, src sanitize.Source, opts sanitize.Options) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return t.upstreamError(ctx, we, src, opts)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *sanitize.SizeError
	if errors.As(err, &se) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: se.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: t.redact(err.Error())}
}

// noteFindings logs and counts suspicious patterns found in a result.
func (t *trust) noteFindings(ctx context.Context, server, name string, rep sanitize.Report) {
	if len(rep.Findings) == 0 {
		return
	}
	ids := view.FindingIDs(rep.Findings)
	for _, id := range ids {
		t.serving.genOr(ctx).Tel.Suspicious(ctx, server, id)
	}
	t.log.Warn("suspicious content", "upstream", server, "tool", name, "reason", ids, "blocked", rep.Blocked)
}

// boundary is the trust boundary's options for content from server e.
func (t *trust) options(snap *view.Snapshot, e *view.ServerEntry) sanitize.Options {
	opts := snap.Sanitize
	opts.Wrap, opts.Redactor = e.Wrap, t.redactor
	return opts
}

// upstreamError passes an upstream's JSON-RPC error through the trust
// boundary: its message is content like a result's (cleaned, redacted,
// scanned, wrapped), its data redacted and scanned.
func (t *trust) upstreamError(ctx context.Context, we *jsonrpc.Error, src sanitize.Source, opts sanitize.Options) *jsonrpc.Error {
	out, rep := sanitize.Error(we, src, opts)
	t.noteFindings(ctx, src.Server, src.Tool+src.Prompt, rep)
	return out
}
