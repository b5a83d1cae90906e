package sanitize

import (
	"math"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server→client requests from an upstream: sampling and elicitation. In
// ModeBlock a request with findings gives nil and Report.Blocked: the
// caller refuses it (answers the upstream with an error) instead of
// forwarding it.

// CreateMessage sanitises a sampling request from src.Server. The text of
// every message and the system prompt are wrapped in a boundary with
// opt.Wrap, as prompt messages are: an upstream's words for the client's
// model are untrusted content like any other. Media pass without notes
// (a note message would change the conversation the server asked for).
// Tool-use names are identifiers (kept, reported), their input and any
// structured content is JSON data; tool-use IDs pass. Roles, the include
// context value, stop sequences and model hint names are cleaned as text,
// metadata as JSON data. Whether to honour includeContext is the proxy's
// decision. Idempotent except in ModeBlock.
func CreateMessage(m *mcp.CreateMessageParams, src Source, opt Options) (*mcp.CreateMessageParams, Report) {
	if m == nil {
		return nil, Report{}
	}
	p := newPass(src, noLimits(opt))
	out := *m
	out.Meta = p.meta(m.Meta)
	out.IncludeContext = p.text("includeContext", m.IncludeContext)
	plans := make([]contentPlan, len(m.Messages))
	roles := make([]mcp.Role, len(m.Messages))
	for i, msg := range m.Messages {
		if msg != nil {
			plans[i], _ = p.planContent(messageWhere(i), msg.Content, nil, src, true)
			roles[i] = label(&p.cleaner, messageWhere(i)+".role", msg.Role)
		}
	}
	out.Metadata = p.data("metadata", m.Metadata)
	out.ModelPreferences = p.modelPreferences(m.ModelPreferences)
	out.StopSequences = p.cleaner.texts("stopSequences", m.StopSequences)
	sys := p.systemPrompt(m.SystemPrompt)
	if blocked, _ := p.finish(); blocked {
		return nil, p.rep
	}
	if sys != nil {
		out.SystemPrompt = p.wrapped(sys)
	}
	out.Messages = make([]*mcp.SamplingMessage, 0, len(m.Messages))
	for i, msg := range m.Messages {
		if msg == nil {
			continue
		}
		if _, c := p.emitContent(plans[i], false, false, src); c != nil {
			out.Messages = append(out.Messages, &mcp.SamplingMessage{Role: roles[i], Content: c})
		}
	}
	return &out, p.rep
}

// CreateMessageWithTools sanitises a sampling request with tools as
// CreateMessage does; every content block of a message is handled as
// there, and each tool definition goes through Tool for src.Server
// (findings under "tools"). The tool choice mode is cleaned as text.
func CreateMessageWithTools(m *mcp.CreateMessageWithToolsParams, src Source, opt Options) (*mcp.CreateMessageWithToolsParams, Report) {
	if m == nil {
		return nil, Report{}
	}
	p := newPass(src, noLimits(opt))
	out := *m
	out.Meta = p.meta(m.Meta)
	out.IncludeContext = p.text("includeContext", m.IncludeContext)
	plans := make([][]contentPlan, len(m.Messages))
	roles := make([]mcp.Role, len(m.Messages))
	for i, msg := range m.Messages {
		if msg == nil {
			continue
		}
		plans[i] = make([]contentPlan, len(msg.Content))
		for j, c := range msg.Content {
			plans[i][j], _ = p.planContent(messageWhere(i)+".content["+strconv.Itoa(j)+"]", c, nil, src, true)
		}
		roles[i] = label(&p.cleaner, messageWhere(i)+".role", msg.Role)
	}
	out.Metadata = p.data("metadata", m.Metadata)
	out.ModelPreferences = p.modelPreferences(m.ModelPreferences)
	out.StopSequences = p.cleaner.texts("stopSequences", m.StopSequences)
	if m.Tools != nil {
		out.Tools = make([]*mcp.Tool, 0, len(m.Tools))
		var found patternSet
		for _, t := range m.Tools {
			if t == nil {
				continue
			}
			ct, fs := Tool(t, src.Server, DefOptions{Redactor: opt.Redactor})
			found |= bitsOf(fs)
			out.Tools = append(out.Tools, ct)
		}
		p.add("tools", found)
	}
	if tc := m.ToolChoice; tc != nil {
		if mode := p.text("toolChoice", tc.Mode); mode != tc.Mode {
			out.ToolChoice = &mcp.ToolChoice{Mode: mode}
		}
	}
	sys := p.systemPrompt(m.SystemPrompt)
	if blocked, _ := p.finish(); blocked {
		return nil, p.rep
	}
	if sys != nil {
		out.SystemPrompt = p.wrapped(sys)
	}
	out.Messages = make([]*mcp.SamplingMessageV2, 0, len(m.Messages))
	for i, msg := range m.Messages {
		if msg == nil {
			continue
		}
		cm := &mcp.SamplingMessageV2{Role: roles[i], Content: make([]mcp.Content, 0, len(msg.Content))}
		for _, plan := range plans[i] {
			if _, c := p.emitContent(plan, false, false, src); c != nil {
				cm.Content = append(cm.Content, c)
			}
		}
		out.Messages = append(out.Messages, cm)
	}
	return &out, p.rep
}

// systemPrompt queues a system prompt as a text to wrap.
func (p *pass) systemPrompt(s string) *textItem {
	if s == "" {
		return nil
	}
	return p.addText("systemPrompt", s, p.src)
}

// modelPreferences cleans the hint names as text; the priorities pass.
func (c *cleaner) modelPreferences(mp *mcp.ModelPreferences) *mcp.ModelPreferences {
	if mp == nil {
		return nil
	}
	out := *mp
	if mp.Hints != nil {
		out.Hints = make([]*mcp.ModelHint, 0, len(mp.Hints))
		for _, h := range mp.Hints {
			if h != nil {
				out.Hints = append(out.Hints, &mcp.ModelHint{Name: c.text("modelPreferences", h.Name)})
			}
		}
	}
	return &out
}

// Elicit sanitises an elicitation request from src.Server. The message is
// shown to a person in a form: it is cleaned, redacted, neutralised and
// scanned, and begins with "[MCP server: NAME] " (as descriptions do) so
// that the person knows which server asks. The requested schema is
// cleaned like a tool's input schema; the URL of a URL elicitation is
// treated as a URI (redacted, neutralised, kept, reported); the mode is
// cleaned as text and the elicitation ID passes. Idempotent except in
// ModeBlock.
func Elicit(e *mcp.ElicitParams, src Source, opt Options) (*mcp.ElicitParams, Report) {
	if e == nil {
		return nil, Report{}
	}
	c := cleaner{r: opt.Redactor}
	out := *e
	out.Mode = c.text("mode", e.Mode)
	out.Message = c.prefixed("message", src.Server, e.Message, math.MaxInt)
	out.RequestedSchema = c.schema("requestedSchema", e.RequestedSchema)
	out.URL = c.uri("url", e.URL)
	out.Meta = c.meta(e.Meta)
	return notification(&out, &c, opt)
}
