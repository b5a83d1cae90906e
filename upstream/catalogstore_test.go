package upstream

import (
	"maps"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestTakeStale: what list_changed and requestResync mark is taken once;
// a wake left over after its lists were taken asks for nothing, not for
// every list.
func TestTakeStale(t *testing.T) {
	c := newCatalogStore(hclog.NewNullLogger())
	if only, due := c.takeStale(); due {
		t.Fatalf("nothing marked: takeStale() = %v, true", only)
	}
	c.listChanged("notifications/tools/list_changed")
	c.listChanged("notifications/resources/list_changed")
	want := map[string]bool{ListTools: true, ListResources: true, ListTemplates: true}
	if only, due := c.takeStale(); !due || !maps.Equal(only, want) {
		t.Errorf("after tools and resources changed: takeStale() = %v, %v; want %v, true", only, due, want)
	}
	if only, due := c.takeStale(); due {
		t.Errorf("taken twice: takeStale() = %v, true", only)
	}
	c.listChanged("notifications/prompts/list_changed")
	c.requestResync()
	if only, due := c.takeStale(); !due || only != nil {
		t.Errorf("after requestResync: takeStale() = %v, %v; want nil (every list), true", only, due)
	}
}
