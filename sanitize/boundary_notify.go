package sanitize

import (
	"errors"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Errors, notifications and completions from an upstream.
//
// Size limits (Options.MaxResultBytes, MaxMediaBytes) apply to results and
// errors, which answer a call; notifications and server→client requests are
// bounded by the transport's message size.

// noLimits returns opt without its size limits.
func noLimits(opt Options) Options {
	opt.MaxResultBytes, opt.MaxMediaBytes = 0, 0
	return opt
}

func blockMode(opt Options) bool { return opt.OnSuspicious == ModeBlock }

// withheld is the text that replaces withheld content: "The KIND from MCP
// server 'S' (tool 'T') was withheld because REASON."
func withheld(kind string, src Source, reason string) string {
	var b strings.Builder
	b.WriteString("The " + kind + " from MCP server '" + attrValue(src.Server) + "'")
	sep := " ("
	for _, a := range src.attrs() {
		if a[1] != "" {
			b.WriteString(sep + a[0] + " '" + attrValue(a[1]) + "'")
			sep = ", "
		}
	}
	if sep == ", " {
		b.WriteString(")")
	}
	b.WriteString(" was withheld because " + reason + ".")
	return b.String()
}

// Error sanitises an upstream's JSON-RPC error answer to tools/call,
// prompts/get, resources/read or completion/complete for src. The code is
// kept. The message is a text the client shows the model (tool errors
// are): cleaned with Text, redacted, scanned and, with opt.Wrap, wrapped
// in a boundary for src, as in ToolResult. Every string of data, object
// keys included, is cleaned, redacted, neutralised and scanned; data is
// encoded anew from what was checked, and data that is not JSON is
// dropped.
//
// MaxResultBytes applies to the message and data together. An error over
// it, or one with findings in ModeBlock (Report.Blocked), keeps its code
// but its message is replaced by a fixed text saying it was withheld and
// why, and its data is dropped. Error is idempotent except in ModeBlock.
func Error(e *jsonrpc.Error, src Source, opt Options) (*jsonrpc.Error, Report) {
	if e == nil {
		return nil, Report{}
	}
	p := newPass(src, opt)
	t := p.addText("message", e.Message, src)
	var w walker
	var data []byte
	if len(e.Data) > 0 {
		w = walker{r: opt.Redactor, scan: true}
		data = w.rawData(e.Data)
		p.size += int64(len(data))
	}
	p.add("data", w.found)
	blocked, err := p.finish()
	var se *SizeError
	switch {
	case errors.As(err, &se):
		reason := "it is " + strconv.FormatInt(se.Size, 10) + " bytes, over the limit of " + strconv.FormatInt(se.Limit, 10) + " bytes"
		return &jsonrpc.Error{Code: e.Code, Message: withheld("error", src, reason)}, p.rep
	case blocked:
		return &jsonrpc.Error{Code: e.Code, Message: withheld("error", src,
			"it matched suspicious patterns: "+strings.Join(p.found.ids(), ", "))}, p.rep
	}
	return &jsonrpc.Error{Code: e.Code, Message: p.wrapped(t), Data: data}, p.rep
}

// LogMessage sanitises a log notification from src.Server (src.Tool when
// it arrived during a call). The logger name and the level are cleaned as
// text. Data that is a string is a text: with opt.Wrap it is wrapped in a
// boundary, as a tool result's text is (clients may put log lines in the
// model's context); otherwise, and for data of any other shape, every
// string in it, object keys included, is cleaned, redacted, neutralised
// and scanned. In ModeBlock a message with findings gives nil and
// Report.Blocked: drop the notification.
func LogMessage(m *mcp.LoggingMessageParams, src Source, opt Options) (*mcp.LoggingMessageParams, Report) {
	if m == nil {
		return nil, Report{}
	}
	p := newPass(src, noLimits(opt))
	out := *m
	out.Logger = p.text("logger", m.Logger)
	out.Level = label(&p.cleaner, "level", m.Level)
	out.Meta = p.meta(m.Meta)
	var t *textItem
	if s, ok := m.Data.(string); ok && opt.Wrap {
		t = p.addText("data", s, src)
	} else {
		out.Data = p.data("data", m.Data)
	}
	if blocked, _ := p.finish(); blocked {
		return nil, p.rep
	}
	if t != nil {
		out.Data = p.wrapped(t)
	}
	return &out, p.rep
}

// Progress sanitises a progress notification. The message is a status
// line for a person: cleaned, redacted, neutralised and scanned, not
// wrapped. The token is the proxy's to map and passes, as do the numbers.
// In ModeBlock a message with findings gives nil and Report.Blocked: drop
// the notification.
func Progress(n *mcp.ProgressNotificationParams, opt Options) (*mcp.ProgressNotificationParams, Report) {
	if n == nil {
		return nil, Report{}
	}
	c := cleaner{r: opt.Redactor}
	out := *n
	out.Message = c.text("message", n.Message)
	out.Meta = c.meta(n.Meta)
	return notification(&out, &c, opt)
}

// ResourceUpdated sanitises a resource-updated notification. The URI must
// keep naming the resource the client subscribed to: it is redacted and
// neutralised but otherwise kept, and characters Text would remove are
// reported as PatternHiddenInIdentifier. In ModeBlock a URI with findings
// gives nil and Report.Blocked: drop the notification.
func ResourceUpdated(n *mcp.ResourceUpdatedNotificationParams, opt Options) (*mcp.ResourceUpdatedNotificationParams, Report) {
	if n == nil {
		return nil, Report{}
	}
	c := cleaner{r: opt.Redactor}
	out := *n
	out.URI = c.uri("uri", n.URI)
	out.Meta = c.meta(n.Meta)
	return notification(&out, &c, opt)
}

// notification finishes a notification that a cleaner handled.
func notification[T any](out *T, c *cleaner, opt Options) (*T, Report) {
	rep := Report{Findings: c.findings()}
	if blockMode(opt) && c.union().blocks() {
		rep.Blocked = true
		return nil, rep
	}
	return out, rep
}

// Cancelled sanitises a cancellation from an upstream. The reason is
// cleaned, redacted, neutralised and scanned; the request ID is the
// proxy's to map and passes. The cancellation itself always goes through:
// in ModeBlock a reason with findings is dropped (Report.Blocked).
func Cancelled(n *mcp.CancelledParams, opt Options) (*mcp.CancelledParams, Report) {
	if n == nil {
		return nil, Report{}
	}
	c := cleaner{r: opt.Redactor}
	out := *n
	out.Reason = c.text("reason", n.Reason)
	out.Meta = c.meta(n.Meta)
	rep := Report{Findings: c.findings()}
	if blockMode(opt) && c.union().blocks() {
		out.Reason, rep.Blocked = "", true
	}
	return &out, rep
}

// Completion sanitises a completion/complete result. The values are
// suggestions the client inserts into an argument, so they are not
// wrapped; each is cleaned, redacted, neutralised and scanned (findings
// under "values"). In ModeBlock a result with findings keeps no values
// (Report.Blocked); it is still a valid answer.
func Completion(res *mcp.CompleteResult, opt Options) (*mcp.CompleteResult, Report) {
	if res == nil {
		return nil, Report{}
	}
	c := cleaner{r: opt.Redactor}
	out := *res
	out.Completion.Values = c.texts("values", res.Completion.Values)
	out.Meta = c.meta(res.Meta)
	rep := Report{Findings: c.findings()}
	if blockMode(opt) && c.union().blocks() {
		out.Completion = mcp.CompletionResultDetails{Values: []string{}}
		rep.Blocked = true
	}
	return &out, rep
}

// ListRoots sanitises a roots/list request from an upstream. It has no
// content, only _meta, which is cleaned as in Meta; it is never blocked.
// Whether the upstream gets any roots is the proxy's decision (DESIGN §12,
// isolation).
func ListRoots(r *mcp.ListRootsParams, opt Options) (*mcp.ListRootsParams, Report) {
	if r == nil {
		return nil, Report{}
	}
	out := *r
	out.Meta = Meta(r.Meta, opt)
	return &out, Report{}
}
