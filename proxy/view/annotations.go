package view

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/policy"
	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// traits is what policy may believe tool t of server e does: the config's
// override for it, and the server's own annotations only when the server
// has trustAnnotations (policy.Believe).
func traits(e *ServerEntry, t *mcp.Tool) policy.Traits {
	return policy.Believe(overrideHints(e.Annotations[t.Name]), serverHints(t.Annotations), e.TrustAnnotations)
}

// allowsTool reports whether the view's rules, the server's and the view's
// readOnly let tool t (known by names) through.
func allowsTool(spec *Spec, e *ServerEntry, t *mcp.Tool, names []string) bool {
	tr := traits(e, t)
	if spec.ReadOnly && !tr.ReadOnly {
		return false
	}
	return spec.Tools.AllowsTool(tr, names...) && e.Tools.AllowsTool(tr, names...)
}

func overrideHints(a *config.ToolAnnotations) policy.Hints {
	if a == nil {
		return policy.Hints{}
	}
	return policy.Hints{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}
}

// serverHints are the hints a server gives. The protocol's readOnlyHint
// and idempotentHint are plain booleans in the SDK: absent reads false,
// which is their default anyway.
func serverHints(a *mcp.ToolAnnotations) policy.Hints {
	if a == nil {
		return policy.Hints{}
	}
	return policy.Hints{ReadOnly: &a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: &a.IdempotentHint, OpenWorld: a.OpenWorldHint}
}

// publishedAnnotations are the annotations a client is shown: the
// server's, with the config's override laid over them hint by hint.
func publishedAnnotations(server *mcp.ToolAnnotations, o *config.ToolAnnotations) *mcp.ToolAnnotations {
	if o == nil {
		return server
	}
	var a mcp.ToolAnnotations
	if server != nil {
		a = *server
	}
	if o.ReadOnlyHint != nil {
		a.ReadOnlyHint = *o.ReadOnlyHint
	}
	if o.DestructiveHint != nil {
		a.DestructiveHint = o.DestructiveHint
	}
	if o.IdempotentHint != nil {
		a.IdempotentHint = *o.IdempotentHint
	}
	if o.OpenWorldHint != nil {
		a.OpenWorldHint = o.OpenWorldHint
	}
	return &a
}
