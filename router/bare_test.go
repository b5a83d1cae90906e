package router_test

import (
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/router"
)

func TestBareNames(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"test_simple_text", "test_simple_text"},
		{"get.file", "get_file"},
		{"", "_"},
		{strings.Repeat("x", 64), strings.Repeat("x", 64)},
	} {
		if got := router.BareName(c.in); got != c.want {
			t.Errorf("BareName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := router.BareName(strings.Repeat("y", 65)); len(got) != 64 {
		t.Errorf("long bare name has %d bytes", len(got))
	}
}

// TestBareCollisions: a bare name that equals another server's bare name, or
// a namespaced name, is settled like any collision: names stay unique.
func TestBareCollisions(t *testing.T) {
	tab, coll := router.Build([]router.Item{
		{Server: "a", Prefix: "a", Name: "echo", Bare: true},
		{Server: "b", Prefix: "b", Name: "echo", Bare: true},
		{Server: "c", Prefix: "c", Name: "mcp_a_echo", Bare: true},
		{Server: "d", Prefix: "a", Name: "echo"},
	})
	if tg, ok := tab.Lookup("echo"); !ok || tg.Server != "a" {
		t.Errorf("echo -> %v %v", tg, ok)
	}
	seen := map[string]bool{}
	for _, e := range tab.Entries() {
		if seen[e.Public] {
			t.Errorf("duplicate public name %s", e.Public)
		}
		seen[e.Public] = true
	}
	if len(tab.Entries()) != 4 || len(coll) != 2 {
		t.Errorf("entries %v, collisions %v", tab.Entries(), coll)
	}
}
