package sanitize

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mode says what happens to a result in which Scan finds suspicious
// patterns. Every mode reports the findings.
type Mode string

const (
	// ModeWarn changes nothing; the caller logs and counts the findings.
	ModeWarn Mode = "warn"
	// ModeAnnotate adds a note line inside the boundary, after the notice,
	// listing the pattern IDs.
	ModeAnnotate Mode = "annotate"
	// ModeBlock withholds the whole result.
	ModeBlock Mode = "block"
)

// Redactor replaces registered secret values in s, so that a secret an
// upstream echoes never reaches the model. Implementations must be safe for
// concurrent use; Redact should be idempotent.
type Redactor interface {
	Redact(s string) string
}

// Options controls the sanitising of what an upstream sends at run time:
// results, errors, notifications and server→client requests. The zero
// value wraps nothing, warns and has no limits.
type Options struct {
	// Wrap puts every text a model reads as content (see boundary.go) in a
	// boundary, neutralises marker look-alikes in it, and flags media in
	// results with a note. If false, those texts pass without a boundary
	// (still cleaned with Text, redacted, size-checked and scanned, but not
	// neutralised), media get no note, and annotate mode puts its note
	// line first in the text. Other strings are neutralised either way.
	Wrap bool
	// OnSuspicious is what happens when Scan finds a pattern. If empty,
	// ModeWarn is used.
	OnSuspicious Mode
	// MaxResultBytes limits the size of a whole result: the bytes of every
	// text, the decoded bytes of every image, audio and blob, and the JSON
	// size of structuredContent. If zero, there is no limit.
	MaxResultBytes int64
	// MaxMediaBytes limits the decoded size of each image, audio and blob.
	// If zero, there is no limit.
	MaxMediaBytes int64
	// Redactor, if not nil, is applied to every string the boundary does
	// not keep as an identifier, right after Text and before scanning.
	Redactor Redactor
}

// Validate reports invalid options.
func (o Options) Validate() error {
	var errs []error
	switch o.OnSuspicious {
	case "", ModeWarn, ModeAnnotate, ModeBlock:
	default:
		errs = append(errs, fmt.Errorf("onSuspicious: %q is not one of warn, annotate, block", o.OnSuspicious))
	}
	if o.MaxResultBytes < 0 {
		errs = append(errs, errors.New("maxResultBytes: must not be negative"))
	}
	if o.MaxMediaBytes < 0 {
		errs = append(errs, errors.New("maxMediaBytes: must not be negative"))
	}
	return errors.Join(errs...)
}

// Source names where content came from. It becomes the attributes of the
// boundary marker: server, then tool, prompt and resource when set. For a
// resource read, Resource is the URI and Tool is empty.
type Source struct {
	Server   string
	Tool     string
	Prompt   string
	Resource string
}

// attrs lists the optional attributes of a source in marker order.
func (s Source) attrs() [3][2]string {
	return [3][2]string{{"tool", s.Tool}, {"prompt", s.Prompt}, {"resource", s.Resource}}
}

// Report describes what sanitising found.
type Report struct {
	// Findings lists each pattern once per place it was found.
	Findings []Finding
	// Blocked is true when ModeBlock withheld the result.
	Blocked bool
	// Bytes is the size of the result as MaxResultBytes measures it.
	Bytes int64

	found patternSet // every finding, with pStrong; set by passes
}

// SizeError is returned when a result or one item of it is over a limit.
// Its message names the sizes, never the content.
type SizeError struct {
	What  string // "result", or an item such as "image content[1]"
	Size  int64
	Limit int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the limit of %d bytes", e.What, e.Size, e.Limit)
}

// BlockedError is returned by ReadResult and PromptResult in ModeBlock when
// the content matched suspicious patterns; those results have no error
// form of their own. ToolResult returns an IsError result instead.
type BlockedError struct {
	IDs []string // pattern IDs
}

func (e *BlockedError) Error() string {
	return "content withheld: it matched suspicious patterns (" + strings.Join(e.IDs, ", ") + ")"
}

// ToolResult sanitises the result of a call to src.Tool on src.Server. It
// returns a new result and leaves res unchanged (items nothing changed in,
// such as most media, are shared).
//
// In order: every text (text contents, embedded resource text) is cleaned
// with Text and redacted, and so is every other string of the result (see
// the treatments in boundary.go: resource links, URIs, MIME types,
// annotations, _meta, the strings and keys of structuredContent, input
// requests); sizes are checked against the limits, which gives a
// *SizeError and no result; texts, resource links and structuredContent
// (as JSON) are scanned; then, with opt.Wrap, each text is wrapped in a
// boundary, all with one fresh nonce, and each image, audio and blob is
// preceded by a text note flagging it as external. StructuredContent keeps
// its shape so that it keeps matching the tool's output schema; only a
// string with invisible characters, a secret or a marker look-alike
// changes. Resource links pass with marker look-alikes neutralised.
// Content of a kind a tool result may not hold is replaced by a note; nil
// content is dropped. Input requests (SEP-2322) are sanitised by Elicit,
// CreateMessage, CreateMessageWithTools and ListRoots; RequestState is an
// opaque token the client echoes to the same server and passes.
//
// An upstream IsError result is sanitised the same way. In ModeBlock, a
// result with findings is replaced by an IsError result that names the
// patterns and holds no content, and Report.Blocked is set.
//
// ToolResult is idempotent except in ModeBlock: a result it produced, given
// again with the same src and options, comes back equal.
func ToolResult(res *mcp.CallToolResult, src Source, opt Options) (*mcp.CallToolResult, Report, error) {
	if res == nil {
		return nil, Report{}, nil
	}
	p := newPass(src, opt)
	// A secret split across two blocks is one a reader joins again.
	if across := acrossContents(opt.Redactor, res.Content); len(across) > 0 && &across[0] != &res.Content[0] {
		cp := *res
		cp.Content = across
		res = &cp
	}
	var one [1]contentPlan // most results are one block
	plans := one[:]
	if len(res.Content) != 1 {
		plans = make([]contentPlan, len(res.Content))
	}
	for i, c := range res.Content {
		var next mcp.Content
		if i+1 < len(res.Content) {
			next = res.Content[i+1]
		}
		var err error
		if plans[i], err = p.planContent(contentWhere(i), c, next, src, false); err != nil {
			return nil, p.rep, err
		}
	}
	structured, _, err := p.structured(res.StructuredContent)
	if err != nil {
		return nil, p.rep, fmt.Errorf("structured content: %w", err)
	}
	meta := p.meta(res.Meta)
	inputs := p.inputRequests(res.InputRequests)
	blocked, err := p.finish()
	if err != nil {
		return nil, p.rep, err
	}
	if blocked {
		return blockedResult(src, p.found), p.rep, nil
	}
	out := mcp.CallToolResult{IsError: res.IsError, RequestState: res.RequestState}
	if res.NeedsInput() {
		out = *res // keeps resultType "input_required"; "complete" is the era's to say
	}
	out.Meta, out.StructuredContent, out.InputRequests = meta, structured, inputs
	out.Content = make([]mcp.Content, 0, len(res.Content)+1)
	for i, plan := range plans {
		noted := i > 0 && plans[i-1].note
		note, sc := p.emitContent(plan, noted, true, src)
		if note != "" {
			out.Content = append(out.Content, &mcp.TextContent{Text: note})
		}
		if sc != nil {
			out.Content = append(out.Content, sc)
		}
	}
	return &out, p.rep, nil
}

// contentWhere names the i-th content block in a finding.
func contentWhere(i int) string {
	if i < len(contentWheres) {
		return contentWheres[i]
	}
	return "content[" + strconv.Itoa(i) + "]"
}

// contentWheres are the names of the first blocks, made once.
var contentWheres = [...]string{"content[0]", "content[1]", "content[2]", "content[3]"}

// blockedResult is the IsError result that replaces a blocked one.
func blockedResult(src Source, found patternSet) *mcp.CallToolResult {
	what := "The result"
	if src.Tool != "" {
		what = "The result of tool '" + attrValue(src.Tool) + "'"
	}
	text := what + " from MCP server '" + attrValue(src.Server) +
		"' was withheld because it matched suspicious patterns: " + strings.Join(found.ids(), ", ") + "."
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// ReadResult sanitises the result of reading resources from server. Each
// text is wrapped with the content's (cleaned) URI as the resource
// attribute; each blob passes as it is. URIs, MIME types, _meta and input
// requests are cleaned as in ToolResult; the cache hints (TTLMs,
// CacheScope) are cleaned too, CacheScope as text. Redaction, size limits
// and scanning work as in ToolResult. In ModeBlock a result with findings
// gives a *BlockedError.
func ReadResult(res *mcp.ReadResourceResult, server string, opt Options) (*mcp.ReadResourceResult, Report, error) {
	if res == nil {
		return nil, Report{}, nil
	}
	p := newPass(Source{Server: server}, opt)
	if across := acrossResources(opt.Redactor, res.Contents); len(across) > 0 && &across[0] != &res.Contents[0] {
		cp := *res
		cp.Contents = across
		res = &cp
	}
	texts := make([]*textItem, len(res.Contents))
	outs := make([]*mcp.ResourceContents, len(res.Contents))
	for i, c := range res.Contents {
		if c == nil {
			continue
		}
		where := "contents[" + strconv.Itoa(i) + "]"
		rc := p.resourceContents(where, c)
		if c.Blob != nil {
			if err := p.addMedia("blob "+where, len(c.Blob)); err != nil {
				return nil, p.rep, err
			}
			outs[i] = rc
			continue
		}
		texts[i] = p.addText(where, c.Text, Source{Server: server, Resource: rc.URI})
		cp := *rc
		outs[i] = &cp
	}
	meta := p.meta(res.Meta)
	scope := p.text("cacheScope", res.CacheScope)
	inputs := p.inputRequests(res.InputRequests)
	blocked, err := p.finish()
	if err != nil {
		return nil, p.rep, err
	}
	if blocked {
		return nil, p.rep, &BlockedError{IDs: p.found.ids()}
	}
	out := mcp.ReadResourceResult{Cacheable: res.Cacheable, RequestState: res.RequestState}
	if res.NeedsInput() {
		out = *res // as in ToolResult
	}
	out.Meta, out.CacheScope, out.InputRequests = meta, scope, inputs
	out.Contents = make([]*mcp.ResourceContents, 0, len(res.Contents))
	for i, rc := range outs {
		if rc == nil {
			continue
		}
		if texts[i] != nil {
			rc.Text = p.wrapped(texts[i])
		}
		// A blob passes as it is: a resources/read answer is data for the
		// client, and an extra contents entry would change what the client
		// observes (its first entry must stay the blob).
		out.Contents = append(out.Contents, rc)
	}
	return &out, p.rep, nil
}

// PromptResult sanitises the result of getting prompt src.Prompt from
// src.Server. The text of every message is wrapped; an image, audio or blob
// message is preceded by a message with the same role holding the note; the
// description and the roles are cleaned with Text, redacted, neutralised
// and scanned but not wrapped. Other fields, redaction, size limits and
// scanning work as in ToolResult. In ModeBlock a result with findings
// gives a *BlockedError.
func PromptResult(res *mcp.GetPromptResult, src Source, opt Options) (*mcp.GetPromptResult, Report, error) {
	if res == nil {
		return nil, Report{}, nil
	}
	p := newPass(src, opt)
	if across := acrossMessages(opt.Redactor, res.Messages); len(across) > 0 && &across[0] != &res.Messages[0] {
		cp := *res
		cp.Messages = across
		res = &cp
	}
	desc := p.text("description", res.Description)
	p.size += int64(len(desc))
	plans := make([]contentPlan, len(res.Messages))
	roles := make([]mcp.Role, len(res.Messages))
	for i, m := range res.Messages {
		if m == nil {
			continue
		}
		var next mcp.Content
		if i+1 < len(res.Messages) && res.Messages[i+1] != nil && res.Messages[i+1].Role == m.Role {
			next = res.Messages[i+1].Content
		}
		var err error
		if plans[i], err = p.planContent(messageWhere(i), m.Content, next, src, false); err != nil {
			return nil, p.rep, err
		}
		roles[i] = label(&p.cleaner, messageWhere(i)+".role", m.Role)
	}
	meta := p.meta(res.Meta)
	inputs := p.inputRequests(res.InputRequests)
	blocked, err := p.finish()
	if err != nil {
		return nil, p.rep, err
	}
	if blocked {
		return nil, p.rep, &BlockedError{IDs: p.found.ids()}
	}
	out := mcp.GetPromptResult{RequestState: res.RequestState}
	if res.NeedsInput() {
		out = *res // as in ToolResult
	}
	out.Description, out.Meta, out.InputRequests = desc, meta, inputs
	out.Messages = make([]*mcp.PromptMessage, 0, len(res.Messages)+1)
	for i, m := range res.Messages {
		if m == nil {
			continue
		}
		noted := i > 0 && plans[i-1].note
		note, c := p.emitContent(plans[i], noted, true, src)
		if note != "" {
			out.Messages = append(out.Messages, &mcp.PromptMessage{Role: roles[i], Content: &mcp.TextContent{Text: note}})
		}
		if c == m.Content && roles[i] == m.Role {
			out.Messages = append(out.Messages, m)
		} else if c != nil {
			out.Messages = append(out.Messages, &mcp.PromptMessage{Role: roles[i], Content: c})
		}
	}
	return &out, p.rep, nil
}

func messageWhere(i int) string { return "messages[" + strconv.Itoa(i) + "]" }
