package router_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	"github.com/mcp-switchboard/switchboard/router"
)

func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func TestBuild(t *testing.T) {
	items := []router.Item{
		{Server: "tavily", Prefix: "tavily", Name: "search"},
		{Server: "github", Prefix: "github", Name: "get_issue"},
		{Server: "github", Prefix: "github", Name: "create.issue"},
	}
	tab, collisions := router.Build(items)
	if len(collisions) != 0 {
		t.Errorf("Build: collisions %v, want none", collisions)
	}
	want := []router.Entry{
		{Public: "mcp_github_create_issue", Target: router.Target{Server: "github", Name: "create.issue"}},
		{Public: "mcp_github_get_issue", Target: router.Target{Server: "github", Name: "get_issue"}},
		{Public: "mcp_tavily_search", Target: router.Target{Server: "tavily", Name: "search"}},
	}
	if got := tab.Entries(); !slices.Equal(got, want) {
		t.Errorf("Entries() = %v, want %v", got, want)
	}
	if tab.Len() != len(want) {
		t.Errorf("Len() = %d, want %d", tab.Len(), len(want))
	}
	for _, e := range want {
		if got, ok := tab.Lookup(e.Public); !ok || got != e.Target {
			t.Errorf("Lookup(%q) = %v, %v, want %v, true", e.Public, got, ok, e.Target)
		}
		if got, ok := tab.Public(e.Target.Server, e.Target.Name); !ok || got != e.Public {
			t.Errorf("Public(%q, %q) = %q, %v, want %q, true", e.Target.Server, e.Target.Name, got, ok, e.Public)
		}
	}
	if got, ok := tab.Lookup("mcp_github_create.issue"); ok {
		t.Errorf("Lookup of the raw name = %v, true, want not found", got)
	}
	if got, ok := tab.Public("github", "create_issue"); ok {
		t.Errorf("Public of an unlisted name = %q, true, want not found", got)
	}
}

func TestBuildEmpty(t *testing.T) {
	for _, items := range [][]router.Item{nil, {}} {
		tab, collisions := router.Build(items)
		if tab == nil || tab.Len() != 0 || len(tab.Entries()) != 0 || collisions != nil {
			t.Errorf("Build(%v) = %v, %v, want an empty table and no collisions", items, tab, collisions)
		}
	}
}

func TestNilTable(t *testing.T) {
	var tab *router.Table
	if got, ok := tab.Lookup("mcp_a_b"); ok {
		t.Errorf("nil Lookup = %v, true", got)
	}
	if got, ok := tab.Public("a", "b"); ok {
		t.Errorf("nil Public = %q, true", got)
	}
	if tab.Entries() != nil || tab.Len() != 0 {
		t.Errorf("nil table: Entries() = %v, Len() = %d", tab.Entries(), tab.Len())
	}
}

func TestBuildDeduplicates(t *testing.T) {
	tab, collisions := router.Build([]router.Item{
		{Server: "a", Prefix: "a", Name: "x"},
		{Server: "a", Prefix: "a", Name: "x"},
		{Server: "a", Prefix: "b", Name: "x"},
	})
	if len(collisions) != 0 {
		t.Errorf("collisions = %v, want none", collisions)
	}
	want := []router.Entry{{Public: "mcp_a_x", Target: router.Target{Server: "a", Name: "x"}}}
	if got := tab.Entries(); !slices.Equal(got, want) {
		t.Errorf("Entries() = %v, want %v", got, want)
	}
}

func TestBuildCollisionWinnerByRank(t *testing.T) {
	// "x_y" is its own name unchanged and keeps it, though "x.y" sorts
	// first: a name that had to be cleaned loses, whatever the input order.
	// Between two own names, the server key that sorts first wins.
	dot := router.Item{Server: "s", Prefix: "p", Name: "x.y"}
	under := router.Item{Server: "s", Prefix: "p", Name: "x_y"}
	other := router.Item{Server: "r", Prefix: "p", Name: "x_y"}
	renamedUnder := "mcp_p_x_y_" + hash8("s\x00x_y")
	renamedDot := "mcp_p_x_y_" + hash8("s\x00x.y")
	tests := []struct {
		name  string
		items []router.Item
		want  []router.Collision
	}{
		{
			name:  "same server",
			items: []router.Item{under, dot},
			want: []router.Collision{{
				Public: "mcp_p_x_y", Winner: router.Target{Server: "s", Name: "x_y"},
				Loser: router.Target{Server: "s", Name: "x.y"}, Renamed: renamedDot,
			}},
		},
		{
			name:  "server key sorts first",
			items: []router.Item{dot, under, other},
			want: []router.Collision{
				{
					Public: "mcp_p_x_y", Winner: router.Target{Server: "r", Name: "x_y"},
					Loser: router.Target{Server: "s", Name: "x.y"}, Renamed: renamedDot,
				},
				{
					Public: "mcp_p_x_y", Winner: router.Target{Server: "r", Name: "x_y"},
					Loser: router.Target{Server: "s", Name: "x_y"}, Renamed: renamedUnder,
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, items := range [][]router.Item{tt.items, reversed(tt.items)} {
				tab, got := router.Build(items)
				if !slices.Equal(got, tt.want) {
					t.Errorf("Build(%v) collisions = %v, want %v", items, got, tt.want)
				}
				for _, c := range got {
					if target, _ := tab.Lookup(c.Renamed); target != c.Loser {
						t.Errorf("Lookup(%q) = %v, want %v", c.Renamed, target, c.Loser)
					}
				}
			}
		})
	}
}

func TestBuildRenameSkipsNaturalNames(t *testing.T) {
	// The loser's first choice is some other tool's natural name; the natural
	// name stays with that tool and the loser takes the next attempt.
	first := "mcp_p_x_y_" + hash8("s\x00x.y")
	items := []router.Item{
		{Server: "s", Prefix: "p", Name: "x.y"},
		{Server: "s", Prefix: "p", Name: "x_y"},
		{Server: "z", Prefix: "p", Name: "x_y_" + hash8("s\x00x.y")},
	}
	tab, collisions := router.Build(items)
	if target, _ := tab.Lookup(first); target != (router.Target{Server: "z", Name: items[2].Name}) {
		t.Errorf("Lookup(%q) = %v, want the natural owner z", first, target)
	}
	want := "mcp_p_x_y_" + hash8("s\x00x.y\x001")
	if len(collisions) != 1 || collisions[0].Renamed != want {
		t.Errorf("collisions = %v, want one renamed to %q", collisions, want)
	}
}

func TestBuildDoesNotKeepInput(t *testing.T) {
	items := []router.Item{{Server: "b", Prefix: "b", Name: "y"}, {Server: "a", Prefix: "a", Name: "x"}}
	tab, _ := router.Build(items)
	items[0].Name = "changed"
	if _, ok := tab.Public("b", "y"); !ok {
		t.Error("changing the input changed the table")
	}
	if items[1].Server != "a" {
		t.Error("Build reordered its input")
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	tab := benchTable()
	name := tab.Entries()[tab.Len()/2].Public
	allocs := testing.AllocsPerRun(1000, func() {
		if _, ok := tab.Lookup(name); !ok {
			t.Fatal("not found")
		}
		if _, ok := tab.Lookup("mcp_missing_tool"); ok {
			t.Fatal("found")
		}
	})
	if allocs != 0 {
		t.Errorf("Lookup allocates %v times per run, want 0", allocs)
	}
}

func benchTable() *router.Table {
	var items []router.Item
	for s := range 20 {
		server := fmt.Sprintf("server-%d", s)
		for n := range 50 {
			items = append(items, router.Item{Server: server, Prefix: server, Name: fmt.Sprintf("tool_%d", n)})
		}
	}
	tab, _ := router.Build(items)
	return tab
}

func BenchmarkLookup(b *testing.B) {
	tab := benchTable()
	name := tab.Entries()[tab.Len()/2].Public
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := tab.Lookup(name); !ok {
			b.Fatal("not found")
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	var items []router.Item
	for _, e := range benchTable().Entries() {
		items = append(items, router.Item{Server: e.Target.Server, Prefix: e.Target.Server, Name: e.Target.Name})
	}
	b.ReportAllocs()
	for b.Loop() {
		router.Build(items)
	}
}

func reversed[S ~[]E, E any](s S) S {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

func TestBareCannotShadowNamespaced(t *testing.T) {
	// A server without namespace whose key sorts first lists a tool named
	// like another server's namespaced tool: the namespaced one keeps its
	// name, the bare one is renamed.
	items := []router.Item{
		{Server: "aaa", Prefix: "aaa", Name: "mcp_github_delete_repo", Bare: true},
		{Server: "github", Prefix: "github", Name: "delete_repo"},
	}
	for _, in := range [][]router.Item{items, reversed(items)} {
		tab, collisions := router.Build(in)
		if target, _ := tab.Lookup("mcp_github_delete_repo"); target != (router.Target{Server: "github", Name: "delete_repo"}) {
			t.Errorf("mcp_github_delete_repo routes to %v, want github's own tool", target)
		}
		if len(collisions) != 1 || collisions[0].Loser.Server != "aaa" {
			t.Errorf("collisions = %v, want the bare server's tool renamed", collisions)
		}
	}
}
