package sanitize

import (
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// contentPlan is what happens to one content item of a tool result, prompt
// message or sampling message.
type contentPlan struct {
	text        *textItem     // its text (text content, embedded text resource) to wrap
	note        bool          // it is our note for the next item: keep as is
	unsupported bool          // a kind this message may not hold: replaced by a note
	out         mcp.Content   // the item with every other field cleaned
	nested      []contentPlan // the content of a sampling tool result
}

// planContent cleans every field of one content item but the text to be
// wrapped, which it queues, and measures the item. next is the item after
// it, if our notes may precede it. sampling allows the tool_use and
// tool_result kinds of sampling messages.
//
// plan.out is a fresh copy whenever the item has a text to wrap or nested
// content (emitContent fills those in), and otherwise the item itself when
// nothing in it changed.
func (p *pass) planContent(where string, c, next mcp.Content, src Source, sampling bool) (contentPlan, error) {
	switch c := c.(type) {
	case *mcp.TextContent:
		if p.opt.Wrap && next != nil && p.isNoteFor(c, next, src) {
			return contentPlan{note: true, out: c}, nil
		}
		meta, _ := p.metaChanged(c.Meta)
		out := &mcp.TextContent{Meta: meta, Annotations: p.annotations(where, c.Annotations)}
		return contentPlan{text: p.addText(where, c.Text, src), out: out}, nil
	case *mcp.ImageContent:
		if err := p.addMedia("image "+where, len(c.Data)); err != nil {
			return contentPlan{}, err
		}
		meta, mc := p.metaChanged(c.Meta)
		ann, mime := p.annotations(where, c.Annotations), p.text(where, c.MIMEType)
		if !mc && ann == c.Annotations && mime == c.MIMEType {
			return contentPlan{out: c}, nil
		}
		out := *c
		out.Meta, out.Annotations, out.MIMEType = meta, ann, mime
		return contentPlan{out: &out}, nil
	case *mcp.AudioContent:
		if err := p.addMedia("audio "+where, len(c.Data)); err != nil {
			return contentPlan{}, err
		}
		meta, mc := p.metaChanged(c.Meta)
		ann, mime := p.annotations(where, c.Annotations), p.text(where, c.MIMEType)
		if !mc && ann == c.Annotations && mime == c.MIMEType {
			return contentPlan{out: c}, nil
		}
		out := *c
		out.Meta, out.Annotations, out.MIMEType = meta, ann, mime
		return contentPlan{out: &out}, nil
	case *mcp.EmbeddedResource:
		return p.planEmbedded(where, c, src)
	case *mcp.ResourceLink:
		return contentPlan{out: p.link(where, c)}, nil
	case *mcp.ToolUseContent:
		if !sampling {
			return contentPlan{unsupported: true}, nil
		}
		// ID pairs the call with its result; the name is an identifier.
		p.ident(where, c.Name)
		out := *c
		out.Meta, _ = p.metaChanged(c.Meta)
		if in, ok := p.data(where, c.Input).(map[string]any); ok || c.Input == nil {
			out.Input = in
		} else {
			out.Input = map[string]any{}
		}
		return contentPlan{out: &out}, nil
	case *mcp.ToolResultContent:
		if !sampling {
			return contentPlan{unsupported: true}, nil
		}
		out := *c
		out.Meta, _ = p.metaChanged(c.Meta)
		out.StructuredContent = p.data(where, c.StructuredContent)
		plan := contentPlan{out: &out, nested: make([]contentPlan, len(c.Content))}
		for i, n := range c.Content {
			var err error
			if plan.nested[i], err = p.planContent(where+".content["+strconv.Itoa(i)+"]", n, nil, src, true); err != nil {
				return contentPlan{}, err
			}
		}
		return plan, nil
	case nil:
		return contentPlan{}, nil
	}
	return contentPlan{unsupported: true}, nil
}

func (p *pass) planEmbedded(where string, c *mcp.EmbeddedResource, src Source) (contentPlan, error) {
	meta, mc := p.metaChanged(c.Meta)
	ann := p.annotations(where, c.Annotations)
	rc := c.Resource
	var text *textItem
	if rc != nil {
		rc = p.resourceContents(where, rc)
		if rc.Blob != nil {
			if err := p.addMedia("resource "+where, len(rc.Blob)); err != nil {
				return contentPlan{}, err
			}
		} else {
			text = p.addText(where, rc.Text, withResource(src, rc.URI))
			if rc == c.Resource {
				cp := *rc
				rc = &cp
			}
		}
	}
	if text == nil && !mc && ann == c.Annotations && rc == c.Resource {
		return contentPlan{out: c}, nil
	}
	return contentPlan{text: text, out: &mcp.EmbeddedResource{Resource: rc, Meta: meta, Annotations: ann}}, nil
}

// resourceContents cleans the fields of resource contents other than the
// text: the URI, the MIME type and _meta. It returns rc itself when nothing
// changed.
func (p *pass) resourceContents(where string, rc *mcp.ResourceContents) *mcp.ResourceContents {
	uri, mime := p.uri(where, rc.URI), p.text(where, rc.MIMEType)
	meta, mc := p.metaChanged(rc.Meta)
	if uri == rc.URI && mime == rc.MIMEType && !mc {
		return rc
	}
	out := *rc
	out.URI, out.MIMEType, out.Meta = uri, mime, meta
	return &out
}

// link cleans a resource link, which passes unwrapped.
func (c *cleaner) link(where string, l *mcp.ResourceLink) *mcp.ResourceLink {
	out := *l
	out.URI = c.uri(where, l.URI)
	out.Name = c.text(where, l.Name)
	out.Title = c.text(where, l.Title)
	out.Description = c.text(where, l.Description)
	out.MIMEType = c.text(where, l.MIMEType)
	out.Meta, _ = c.metaChanged(l.Meta)
	out.Annotations = c.annotations(where, l.Annotations)
	out.Icons = c.icons(where, l.Icons)
	return &out
}

// emitContent returns the sanitised form of a planned item: the note for
// it, if notes is set, it needs one and the item before was not already
// that note, and the item itself (nil to drop it).
func (p *pass) emitContent(plan contentPlan, noted, notes bool, src Source) (note string, out mcp.Content) {
	if plan.note {
		return "", plan.out
	}
	if plan.unsupported {
		// A kind this message may not hold (a tool result's tool_use): its
		// text would reach the model unwrapped.
		return "", &mcp.TextContent{Text: "[Content of an unsupported type from MCP server '" + attrValue(p.src.Server) + "' was withheld.]"}
	}
	switch c := plan.out.(type) {
	case *mcp.TextContent:
		c.Text = p.wrapped(plan.text)
		return "", c
	case *mcp.EmbeddedResource:
		if plan.text != nil {
			c.Resource.Text = p.wrapped(plan.text)
			return "", c
		}
	case *mcp.ToolResultContent:
		c.Content = make([]mcp.Content, 0, len(plan.nested))
		for _, n := range plan.nested {
			if _, nc := p.emitContent(n, false, false, src); nc != nil {
				c.Content = append(c.Content, nc)
			}
		}
		return "", c
	case nil:
		return "", nil
	}
	if notes && !noted {
		if n, ok := p.mediaNote(plan.out, src); ok {
			note = n
		}
	}
	return note, plan.out
}

// metaChanged is meta that also reports whether anything changed.
func (c *cleaner) metaChanged(m mcp.Meta) (mcp.Meta, bool) {
	if m == nil {
		return nil, false
	}
	w := walker{r: c.r, uris: true}
	out, changed := w.object(m, 0)
	return mcp.Meta(out), changed
}

// structured cleans and scans structuredContent: every string, keys
// included, as text, each on its own and decoded (so that an escaped line
// break separates words and lines as it does for a reader of the value).
// It returns the value, v itself when nothing changed, and its encoding,
// whose size counts toward the result.
func (p *pass) structured(v any) (any, []byte, error) {
	if v == nil {
		return nil, nil, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	w := walker{r: p.r, scan: true}
	out, changed := w.value(v, 0)
	if changed {
		if data, err = json.Marshal(out); err != nil {
			return nil, nil, err
		}
	}
	p.size += int64(len(data))
	p.addPlain("structuredContent", w.found)
	return out, data, nil
}

// inputRequests sanitises the input requests a result carries (SEP-2322),
// each with the function of its kind, and records their findings under
// "inputRequests" (request keys are the upstream's and stay out of
// findings). The requests themselves are never blocked here: their
// findings count toward the result's own ModeBlock. A request of an
// unknown kind, or nil, is dropped.
func (p *pass) inputRequests(m mcp.InputRequestMap) mcp.InputRequestMap {
	if m == nil {
		return nil
	}
	sub := p.opt
	sub.OnSuspicious, sub.MaxResultBytes, sub.MaxMediaBytes = ModeWarn, 0, 0
	out := make(mcp.InputRequestMap, len(m))
	var found patternSet
	for k, r := range m {
		var rep Report
		switch r := r.(type) {
		case *mcp.ElicitParams:
			if r != nil {
				out[k], rep = Elicit(r, p.src, sub)
			}
		case *mcp.CreateMessageParams:
			if r != nil {
				out[k], rep = CreateMessage(r, p.src, sub)
			}
		case *mcp.CreateMessageWithToolsParams:
			if r != nil {
				out[k], rep = CreateMessageWithTools(r, p.src, sub)
			}
		case *mcp.ListRootsParams:
			if r != nil {
				out[k], rep = ListRoots(r, sub)
			}
		}
		if rep.found != 0 {
			found |= rep.found
		} else if len(rep.Findings) > 0 {
			for _, f := range rep.Findings {
				found |= patternBit(f.ID)
			}
			found |= pStrong // not measured: count it as strong
		}
	}
	p.add("inputRequests", found)
	return out
}
