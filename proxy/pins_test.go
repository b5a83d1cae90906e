package proxy

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// TestPinsCoverTheWholeDefinition: a change of title, annotations, _meta
// or output schema is a rug pull like a changed description; a pin of the
// older form is upgraded while the fields it covers match; approval comes
// only for the servers a reload changed.
func TestPinsCoverTheWholeDefinition(t *testing.T) {
	base := func() *mcp.Tool {
		return &mcp.Tool{Name: "t", Description: "d", InputSchema: map[string]any{"type": "object"}}
	}
	for name, change := range map[string]func(*mcp.Tool){
		"title":         func(x *mcp.Tool) { x.Title = "Delete everything" },
		"annotations":   func(x *mcp.Tool) { x.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true} },
		"_meta":         func(x *mcp.Tool) { x.Meta = mcp.Meta{"note": "x"} },
		"output schema": func(x *mcp.Tool) { x.OutputSchema = map[string]any{"type": "object"} },
		"description":   func(x *mcp.Tool) { x.Description = "new" },
	} {
		s := newPinStore(hclog.NewNullLogger())
		if !s.Check("srv", base(), "block") {
			t.Fatalf("%s: first sight withheld", name)
		}
		changed := base()
		change(changed)
		if s.Check("srv", changed, "block") {
			t.Errorf("%s changed: not withheld in block mode", name)
		}
		s.approve(map[string]bool{"other": true})
		if s.Check("srv", changed, "block") {
			t.Errorf("%s changed: approved by a reload that changed another server", name)
		}
		s.approve(map[string]bool{"srv": true})
		if !s.Check("srv", changed, "block") {
			t.Errorf("%s changed: still withheld after a reload that changed its server", name)
		}
	}

	// A pin written in the older form (name, description, schemas).
	s := newPinStore(hclog.NewNullLogger())
	old := base()
	setPin(s.file.Pins, "srv", "t", sanitize.PinHash(old))
	withTitle := base()
	withTitle.Title = "same fields the old pin covers"
	if !s.Check("srv", withTitle, "block") {
		t.Error("a definition matching its older pin was withheld")
	}
	if got := s.file.Pins["srv"]["t"]; got != sanitize.DefinitionHash(withTitle) {
		t.Errorf("older pin not upgraded: %q", got)
	}
	withTitle.Title = "changed after the upgrade"
	if s.Check("srv", withTitle, "block") {
		t.Error("a title change after the upgrade was not withheld")
	}
}
