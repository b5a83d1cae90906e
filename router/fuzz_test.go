package router_test

import (
	"cmp"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/router"
)

// fuzzItems turns fuzz input into items: one per line, server|prefix|name,
// split at the first two '|'. A line with a single '|' is server|name and
// takes router.Prefix(server, "") as its prefix, the way config derives it.
// Prefixes are otherwise arbitrary strings, so the properties are checked
// even for prefixes the config would reject.
func fuzzItems(data string) []router.Item {
	var items []router.Item
	for _, line := range strings.Split(data, "\n") {
		f := strings.SplitN(line, "|", 3)
		switch len(f) {
		case 2:
			items = append(items, router.Item{Server: f[0], Prefix: router.Prefix(f[0], ""), Name: f[1]})
		case 3:
			items = append(items, router.Item{Server: f[0], Prefix: f[1], Name: f[2]})
		}
	}
	return items
}

func FuzzNames(f *testing.F) {
	f.Add("github|gh|get_issue\ntavily|search")
	f.Fuzz(func(t *testing.T, data string) {
		items := fuzzItems(data)
		tab, collisions := router.Build(items)

		// The prefix Build uses for a (server, name) pair listed more than
		// once is the one that sorts first.
		prefix := map[router.Target]string{}
		for _, it := range items {
			k := router.Target{Server: it.Server, Name: it.Name}
			if p, ok := prefix[k]; !ok || it.Prefix < p {
				prefix[k] = it.Prefix
			}
		}
		if tab.Len() != len(prefix) || len(tab.Entries()) != len(prefix) {
			t.Fatalf("Len() = %d, len(Entries()) = %d, want %d distinct (server, name) pairs",
				tab.Len(), len(tab.Entries()), len(prefix))
		}

		owner := map[string]router.Target{}
		for i, e := range tab.Entries() {
			if !publicRE.MatchString(e.Public) {
				t.Errorf("public name %q does not match %s", e.Public, publicRE)
			}
			if prev, ok := owner[e.Public]; ok {
				t.Errorf("%q is shared by %v and %v", e.Public, prev, e.Target)
			}
			owner[e.Public] = e.Target
			if i > 0 && tab.Entries()[i-1].Public >= e.Public {
				t.Errorf("entries not sorted: %q before %q", tab.Entries()[i-1].Public, e.Public)
			}
			if _, ok := prefix[e.Target]; !ok {
				t.Errorf("entry %q routes to %v, which is not an input item", e.Public, e.Target)
			}
		}
		for k := range prefix {
			pub, ok := tab.Public(k.Server, k.Name)
			if !ok {
				t.Errorf("Public(%q, %q) not found", k.Server, k.Name)
				continue
			}
			if got, ok := tab.Lookup(pub); !ok || got != k {
				t.Errorf("Lookup(Public(%q, %q) = %q) = %v, %v", k.Server, k.Name, pub, got, ok)
			}
		}

		// The first pair in (rank, server, name) order that wants a natural
		// name gets it, rank 0 being a name that needs no cleaning or
		// shortening; every other pair wanting it is a reported collision.
		rank := func(k router.Target) int {
			if router.PublicName(prefix[k], k.Name) == "mcp_"+prefix[k]+"_"+k.Name {
				return 0
			}
			return 1
		}
		keys := slices.SortedFunc(func(yield func(router.Target) bool) {
			for k := range prefix {
				if !yield(k) {
					return
				}
			}
		}, func(a, b router.Target) int {
			return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Server, b.Server), strings.Compare(a.Name, b.Name))
		})
		claimed := map[string]router.Target{}
		lost := map[router.Target]string{}
		for _, k := range keys {
			want := router.PublicName(prefix[k], k.Name)
			if _, ok := claimed[want]; ok {
				lost[k] = want
				continue
			}
			claimed[want] = k
			if got, _ := tab.Public(k.Server, k.Name); got != want {
				t.Errorf("%v: got %q, want its natural name %q", k, got, want)
			}
		}
		if len(collisions) != len(lost) {
			t.Errorf("%d collisions reported, want %d", len(collisions), len(lost))
		}
		for _, c := range collisions {
			if lost[c.Loser] != c.Public || claimed[c.Public] != c.Winner {
				t.Errorf("collision %+v: want loser of %q to %v", c, lost[c.Loser], claimed[c.Public])
			}
			if got, _ := tab.Public(c.Loser.Server, c.Loser.Name); got != c.Renamed || c.Renamed == c.Public {
				t.Errorf("collision %+v: loser is at %q", c, got)
			}
		}

		// Build depends only on the set of items.
		h := fnv.New64a()
		h.Write([]byte(data))
		shuffled := slices.Clone(items)
		rand.New(rand.NewPCG(h.Sum64(), 1)).Shuffle(len(shuffled), func(i, j int) {
			shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
		})
		for _, perm := range [][]router.Item{reversed(items), shuffled} {
			tab2, collisions2 := router.Build(perm)
			if !slices.Equal(tab.Entries(), tab2.Entries()) || !slices.Equal(collisions, collisions2) {
				t.Fatalf("Build is not deterministic under permutation:\n%v\n%v\nvs\n%v\n%v",
					tab.Entries(), collisions, tab2.Entries(), collisions2)
			}
		}
	})
}
