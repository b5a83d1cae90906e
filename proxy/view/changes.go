package view

import "github.com/mcp-switchboard/switchboard/upstream"

// Exposes reports whether the view serves handle h.
func (vs *Spec) Exposes(h *upstream.Handle) bool {
	for _, e := range vs.Servers {
		if e.Handle == h {
			return true
		}
	}
	return false
}

// ListChanges names the list_changed notifications between two versions
// of a view.
func ListChanges(old, now Hashes) []string {
	var out []string
	if old.tools != now.tools {
		out = append(out, "notifications/tools/list_changed")
	}
	if old.prompts != now.prompts {
		out = append(out, "notifications/prompts/list_changed")
	}
	if old.resources != now.resources {
		out = append(out, "notifications/resources/list_changed")
	}
	return out
}
