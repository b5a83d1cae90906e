package config

import "strings"

// Annotations in config (docs/config.md, "What a tool does"):
//
//   - Server.TrustAnnotations lets policy believe the hints a server gives
//     its tools (readOnly views, class denies). Unset, they are published
//     but never believed: policy takes the protocol's worst-case defaults.
//   - Server.Annotations overrides, per tool (by the server's own name for
//     it), the hints the server gives: the operator's word, believed
//     whatever trustAnnotations says, and what clients are shown.
//   - Agent.ReadOnly (and agents.defaults.readOnly, which also applies to
//     the default view) shows only the tools believed read-only.

// ToolAnnotations are the behaviour hints of one tool (the protocol's
// ToolAnnotations); an unset hint is the server's, or the protocol's
// default.
type ToolAnnotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// ReadOnly reports whether a view with agent ag (nil: the default view)
// is read-only: the agent's own readOnly, else agents.defaults.readOnly.
func (c *Config) ReadOnly(ag *Agent) bool {
	if ag != nil && ag.ReadOnly != nil {
		return *ag.ReadOnly
	}
	if c.Agents != nil && c.Agents.Defaults != nil && c.Agents.Defaults.ReadOnly != nil {
		return *c.Agents.Defaults.ReadOnly
	}
	return false
}

// annotations checks a server's per-tool annotation overrides.
func (v *validator) annotations(path string, s *Server) {
	for _, name := range sortedKeys(s.Annotations) {
		p := joinKey(path+".annotations", name)
		a := s.Annotations[name]
		switch {
		case strings.TrimSpace(name) == "":
			v.add(p, "tool name must not be empty")
		case a == nil:
			v.add(p, "must be an object of hints")
		case a.ReadOnlyHint == nil && a.DestructiveHint == nil && a.IdempotentHint == nil && a.OpenWorldHint == nil:
			v.add(p, "names no hint; give readOnlyHint, destructiveHint, idempotentHint or openWorldHint")
		}
	}
}
