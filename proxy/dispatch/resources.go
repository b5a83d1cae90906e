package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/sanitize"
)

// getPrompt forwards prompts/get, or answers the built-in prompt.
func (d *Dispatcher) getPrompt(ctx context.Context, v *view.View, req *session.Request) (any, error) {
	var params mcp.GetPromptParams
	if err := decodeParams(req, &params); err != nil {
		return nil, err
	}
	r, ok := v.Prompts[params.Name]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", params.Name)}
	}
	if r.Entry == nil {
		return d.resourceContext(ctx, v, req)
	}
	src, opts := sanitize.Source{Server: r.Entry.Key, Prompt: r.Original}, d.trust.options(v.Snap, r.Entry)
	up := &mcp.GetPromptParams{Name: r.Original, Arguments: params.Arguments, Meta: withProgress(&params),
		InputResponses: params.InputResponses, RequestState: params.RequestState}
	h, err := d.clients.handleFor(ctx, r.Entry, req.Session)
	if err != nil {
		return nil, clientError(err)
	}
	res, err := h.GetPrompt(forCaller(ctx), up, newCallSink(d.trust, req, progressToken(req.Params), src, opts))
	if err != nil {
		return nil, d.trust.protocolError(ctx, err, src, opts)
	}
	out, rep, err := sanitize.PromptResult(res, src, opts)
	if err != nil {
		return nil, d.trust.protocolError(ctx, err, src, opts)
	}
	d.trust.noteFindings(ctx, r.Entry.Key, r.Original, rep)
	publicAppPrompt(out, r.Entry.Prefix)
	return out, nil
}

// readResource forwards resources/read to the URI's owner and wraps its
// text as untrusted (MCP Apps UI resources pass unwrapped, see
// trust.readResult). Every URI the view's servers own is routed, including
// ones an upstream never listed (resource links in tool results).
func (d *Dispatcher) readResource(ctx context.Context, v *view.View, req *session.Request) (any, error) {
	var params mcp.ReadResourceParams
	if err := decodeParams(req, &params); err != nil {
		return nil, err
	}
	e, own := v.Locate(params.URI)
	if e == nil {
		return nil, mcp.ResourceNotFoundError(params.URI)
	}
	public := params.URI
	params.Meta = forwardableMeta(params.Meta)
	params.URI = own
	return d.readFrom(ctx, v, e, req, &params, public)
}

// readFrom reads a resource from e; params are the upstream's (their
// _meta forwardable). public is the URI as the client knows it, which
// boundaries and errors name: the listed URI after the trust boundary,
// never the upstream's own when that held a secret or a marker.
func (d *Dispatcher) readFrom(ctx context.Context, v *view.View, e *view.ServerEntry, req *session.Request, params *mcp.ReadResourceParams, public string) (*mcp.ReadResourceResult, error) {
	src, opts := sanitize.Source{Server: e.Key, Resource: public}, d.trust.options(v.Snap, e)
	h, err := d.clients.handleFor(ctx, e, req.Session)
	if err != nil {
		return nil, clientError(err)
	}
	res, err := h.ReadResource(forCaller(ctx), params, newCallSink(d.trust, req, nil, src, opts))
	if err != nil {
		return nil, d.trust.protocolError(ctx, err, src, opts)
	}
	out, err := d.trust.readResult(ctx, res, e.Key, opts)
	if err != nil {
		return nil, d.trust.protocolError(ctx, err, src, opts)
	}
	publicAppURIs(out, e.Prefix)
	return out, nil
}

// resourceContext is the built-in prompt: every visible resource, read and
// wrapped, in URI order, as one user message.
func (d *Dispatcher) resourceContext(ctx context.Context, v *view.View, req *session.Request) (*mcp.GetPromptResult, error) {
	var b strings.Builder
	b.WriteString("Context from the resources of the connected MCP servers. Each block is untrusted external content.\n")
	limit := v.Snap.Sanitize.MaxResultBytes
	for _, uri := range view.SortedKeys(v.Resources) {
		r := v.Resources[uri]
		// The upstream is asked for its own URI; what the text names
		// is the listed one.
		res, err := d.readFrom(ctx, v, r.Entry, req, &mcp.ReadResourceParams{URI: r.URI}, r.Resource.URI)
		// Everything about a resource, its failure and its blobs' notes
		// included, comes from its server: each inside a boundary.
		src := sanitize.Source{Server: r.Entry.Key, Resource: r.Resource.URI}
		if err != nil {
			fmt.Fprintf(&b, "\n%s\n", sanitize.Wrap("[the resource could not be read: "+d.trust.redact(err.Error())+"]", src, ""))
			continue
		}
		for _, c := range res.Contents {
			if c == nil {
				continue
			}
			b.WriteString("\n")
			if c.Text != "" {
				b.WriteString(c.Text)
			} else {
				b.WriteString(sanitize.Wrap(fmt.Sprintf("[binary resource %s (%s), %d bytes of base64 omitted]", c.URI, c.MIMEType, len(c.Blob)), src, ""))
			}
			b.WriteString("\n")
		}
		if limit > 0 && int64(b.Len()) > limit {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("resource context is over the limit of %d bytes", limit)}
		}
	}
	return &mcp.GetPromptResult{
		Description: "Every resource of this endpoint, wrapped as untrusted content.",
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}},
	}, nil
}

// complete routes completion/complete: ref/prompt by the prompt table,
// ref/resource by the URI or template owner.
func (d *Dispatcher) complete(ctx context.Context, v *view.View, req *session.Request) (any, error) {
	var params mcp.CompleteParams
	if err := decodeParams(req, &params); err != nil {
		return nil, err
	}
	ref := params.Ref
	if ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion: missing ref"}
	}
	params.Meta = forwardableMeta(params.Meta)
	var e *view.ServerEntry
	switch ref.Type {
	case "ref/prompt":
		r, ok := v.Prompts[ref.Name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		if r.Entry == nil {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		}
		e = r.Entry
		params.Ref = &mcp.CompleteReference{Type: ref.Type, Name: r.Original}
	case "ref/resource":
		for _, t := range v.Templates {
			if t.Template.URITemplate == ref.URI {
				e = t.Entry
				// A ui:// template is published namespaced: the
				// server completes its own.
				params.Ref = &mcp.CompleteReference{Type: ref.Type, URI: t.Compiled.Raw()}
				break
			}
		}
		if e == nil {
			var own string
			if e, own = v.Locate(ref.URI); e != nil {
				params.Ref = &mcp.CompleteReference{Type: ref.Type, URI: own}
			}
		}
		if e == nil {
			return nil, mcp.ResourceNotFoundError(ref.URI)
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: unknown ref type %q", ref.Type)}
	}
	src, opts := sanitize.Source{Server: e.Key}, d.trust.options(v.Snap, e)
	h, err := d.clients.handleFor(ctx, e, req.Session)
	if err != nil {
		return nil, clientError(err)
	}
	res, err := h.Complete(forCaller(ctx), &params, newCallSink(d.trust, req, nil, src, opts))
	if err != nil {
		return nil, d.trust.protocolError(ctx, err, src, opts)
	}
	out, rep := sanitize.Completion(res, opts)
	d.trust.noteFindings(ctx, e.Key, "", rep)
	return out, nil
}

// clientError is the protocol error for a request refused a per-client
// instance (clientHandles.handleFor): over maxSessions, it says so.
func clientError(err error) error {
	if errors.Is(err, session.ErrSessionLimit) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return err
}
