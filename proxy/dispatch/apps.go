package dispatch

import (
	"context"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/router"
	"github.com/mcp-switchboard/switchboard/sanitize"
)

// publicAppResult gives the ui:// URIs a tool result names their public
// form (router.AppURI with the server's prefix), as a client reads them
// back: resource links, embedded resources and the result's _meta.ui
// resourceUri. What changes is copied: the rest is the upstream's value.
func publicAppResult(res *mcp.CallToolResult, prefix string) {
	if res == nil {
		return
	}
	res.Meta = view.PublicAppMeta(res.Meta, prefix)
	for i, c := range res.Content {
		res.Content[i] = publicAppContent(c, prefix)
	}
}

// publicAppPrompt does for a prompts/get result what publicAppResult does
// for a tool's: its messages' resource links and embedded resources name
// a ui:// URI by its public form.
func publicAppPrompt(res *mcp.GetPromptResult, prefix string) {
	if res == nil {
		return
	}
	for i, m := range res.Messages {
		if m == nil {
			continue
		}
		if c := publicAppContent(m.Content, prefix); c != m.Content {
			cp := *m
			cp.Content = c
			res.Messages[i] = &cp
		}
	}
}

// publicAppContent is c, or a copy of it naming its ui:// URI by the
// public form when it is a resource link or an embedded resource.
func publicAppContent(c mcp.Content, prefix string) mcp.Content {
	switch c := c.(type) {
	case *mcp.ResourceLink:
		if router.IsAppURI(c.URI) {
			cp := *c
			cp.URI = router.AppURI(prefix, c.URI)
			return &cp
		}
	case *mcp.EmbeddedResource:
		if c.Resource != nil && router.IsAppURI(c.Resource.URI) {
			rc := *c.Resource
			rc.URI = router.AppURI(prefix, rc.URI)
			cp := *c
			cp.Resource = &rc
			return &cp
		}
	}
	return c
}

// publicAppURIs gives the ui:// contents of a read their public URI
// (router.AppURI with the server's prefix), as the client reads them
// back; their bytes, MIME type and _meta stay the server's. Contents are
// copied before they change: a UI resource is the upstream's own value.
func publicAppURIs(res *mcp.ReadResourceResult, prefix string) {
	if res == nil {
		return
	}
	for i, c := range res.Contents {
		if c == nil || !router.IsAppURI(c.URI) {
			continue
		}
		cp := *c
		cp.URI = router.AppURI(prefix, c.URI)
		res.Contents[i] = &cp
	}
}

// readResult passes a resources/read answer from server through the trust
// boundary. MCP Apps UI resources (sanitize.IsApp) are not model-facing:
// the host renders them in a sandbox, so they pass byte for byte, their
// _meta (csp, permissions, domain) as the server wrote it, once
// sanitize.CheckApp found them within the size limits and free of
// configured secrets; a UI resource that is not is refused, never
// altered. Every other entry, and the result's own _meta, pass the
// boundary as any resource does.
func (t *trust) readResult(ctx context.Context, res *mcp.ReadResourceResult, server string, opts sanitize.Options) (*mcp.ReadResourceResult, error) {
	if res == nil || !slices.ContainsFunc(res.Contents, sanitize.IsApp) {
		out, rep, err := sanitize.ReadResult(res, server, opts)
		if err != nil {
			return nil, err
		}
		t.noteFindings(ctx, server, "", rep)
		return out, nil
	}
	if err := sanitize.CheckApp(res.Contents, server, opts); err != nil {
		var se *sanitize.AppSecretError
		if errors.As(err, &se) {
			t.log.Warn("secret withheld", "upstream", server, "uri", se.URI)
		}
		return nil, err // switchboard's own message (protocolError)
	}
	rest := *res
	rest.Contents = slices.DeleteFunc(slices.Clone(res.Contents), func(c *mcp.ResourceContents) bool { return c == nil || sanitize.IsApp(c) })
	out, rep, err := sanitize.ReadResult(&rest, server, opts)
	if err != nil {
		return nil, err
	}
	t.noteFindings(ctx, server, "", rep)
	others := out.Contents
	merged := make([]*mcp.ResourceContents, 0, len(res.Contents))
	for _, c := range res.Contents {
		switch {
		case c == nil:
		case sanitize.IsApp(c):
			merged = append(merged, c)
		case len(others) > 0:
			merged = append(merged, others[0])
			others = others[1:]
		}
	}
	out.Contents = merged
	return out, nil
}

// extensions are the extensions declared to ss's client: its view's.
func (d *Dispatcher) extensions(ctx context.Context, ss *session.Session, caps *mcp.ClientCapabilities) map[string]any {
	return viewExtensions(ctx, d, PrincipalOf(ss).View, caps)
}

// viewExtensions are the extensions view id declares downstream to a
// client that declared caps (see view.View.Extensions). A client that
// declared extensions of its own negotiates them: for it, the view's
// servers on their first start without a cached catalog are waited for,
// as tools/list waits (at most firstListTimeout from switchboard's
// start), since a client learns a server's extensions only here. Any
// other client is answered at once.
func viewExtensions(ctx context.Context, d *Dispatcher, id string, caps *mcp.ClientCapabilities) map[string]any {
	v := d.serving.Load().Views[id]
	if v == nil {
		return nil
	}
	if caps != nil && len(caps.Extensions) > 0 {
		v = d.awaitFirstStarts(ctx, v)
	}
	return v.Extensions()
}
