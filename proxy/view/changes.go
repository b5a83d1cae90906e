package view

import "github.com/mcp-switchboard/switchboard/upstream"

// Exposes reports whether the view serves handle h.
func (vs *Spec) Exposes(h *upstream.Handle) bool {
	return vs.Entry(h) != nil
}

// Entry is the view's entry for h, or nil when the view does not show it.
func (vs *Spec) Entry(h *upstream.Handle) *ServerEntry {
	for _, e := range vs.Servers {
		if e.Handle == h {
			return e
		}
	}
	return nil
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
