package view

import (
	"testing"
)

func TestOwnToolNames(t *testing.T) {
	if ownTools[0].Name != FindToolsName || ownTools[1].Name != CallToolName {
		t.Errorf("own tools are %q and %q, want %q and %q", ownTools[0].Name, ownTools[1].Name, FindToolsName, CallToolName)
	}
}
