package router

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Item is one upstream tool or prompt as the router sees it.
type Item struct {
	// Server is the config key of the server; any string.
	Server string
	// Prefix is the server's prefix, already checked with ValidPrefix.
	Prefix string
	// Name is the upstream's original name; any string, possibly empty.
	Name string
	// Bare publishes the item under its own (cleaned) name, without the
	// mcp_<prefix>_ namespace: for clients that call an upstream's tools by
	// their original names. Collisions are settled as for any other name.
	Bare bool
}

// Target is where a public name routes: a server's config key and the name
// the upstream listed.
type Target struct{ Server, Name string }

// Entry is one row of a built Table.
type Entry struct {
	Public string
	Target Target
}

// Collision records a public name that two items wanted. Winner kept it;
// Loser was renamed to Renamed.
type Collision struct {
	Public  string
	Winner  Target
	Loser   Target
	Renamed string
}

// Table maps public names to targets and back. It is immutable once built and
// safe for concurrent use. The nil *Table is an empty table.
type Table struct {
	entries  []Entry // sorted by Public
	byPublic map[string]Target
	byTarget map[Target]string
}

// Build makes a Table from items. The result depends only on the set of
// items, never on their order, so tools/list is stable across reloads.
//
// Items with the same Server and Name are one entry; if their prefixes differ,
// the prefix that sorts first is used.
//
// Each item wants PublicName(Prefix, Name) (BareName(Name) when Bare).
// Natural names are handed out by rank, so that no name can be taken from
// the item it belongs to: first namespaced items whose wanted name is their
// own name unchanged, then namespaced items whose name had to be cleaned or
// shortened, then bare items in the same two ranks; within a rank, by Server,
// then Name. So a decoy whose name cleans to another tool's name, or a bare
// server's tool named like another server's namespaced one, is the one
// renamed. A loser gets its wanted name cut to 55 bytes plus "_" and 8 hex
// digits of the SHA-256 of Server + "\x00" + Name; should that be taken as
// well, the hash input gets "\x00" and an attempt counter (1, 2, …) appended
// until the name is free. Natural names are all assigned before any loser is
// renamed, so a renamed item never takes the natural name of another. Each
// rename is returned as a Collision, in the order of the losers (Server,
// then Name).
func Build(items []Item) (*Table, []Collision) {
	its := slices.Clone(items)
	slices.SortFunc(its, func(a, b Item) int {
		return cmp.Or(
			strings.Compare(a.Server, b.Server),
			strings.Compare(a.Name, b.Name),
			strings.Compare(a.Prefix, b.Prefix),
		)
	})
	its = slices.CompactFunc(its, func(a, b Item) bool {
		return a.Server == b.Server && a.Name == b.Name
	})

	t := &Table{
		entries:  make([]Entry, 0, len(its)),
		byPublic: make(map[string]Target, len(its)),
		byTarget: make(map[Target]string, len(its)),
	}
	want := make([]string, len(its))
	rank := make([]int, len(its))
	for i, it := range its {
		own := it.Name
		if it.Bare {
			want[i], rank[i] = BareName(it.Name), 2
		} else {
			want[i], own = PublicName(it.Prefix, it.Name), "mcp_"+it.Prefix+"_"+it.Name
		}
		if want[i] != own {
			rank[i]++
		}
	}
	order := make([]int, len(its))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rank[a], rank[b]) })
	var losers []int
	for _, i := range order {
		if _, taken := t.byPublic[want[i]]; taken {
			losers = append(losers, i)
			continue
		}
		t.add(want[i], Target{Server: its[i].Server, Name: its[i].Name})
	}
	slices.Sort(losers)

	var collisions []Collision
	for _, i := range losers {
		loser := Target{Server: its[i].Server, Name: its[i].Name}
		pub := rename(want[i], loser, t.byPublic)
		collisions = append(collisions, Collision{
			Public:  want[i],
			Winner:  t.byPublic[want[i]],
			Loser:   loser,
			Renamed: pub,
		})
		t.add(pub, loser)
	}

	slices.SortFunc(t.entries, func(a, b Entry) int { return strings.Compare(a.Public, b.Public) })
	return t, collisions
}

// rename returns the first free name for a loser that wanted want.
func rename(want string, loser Target, taken map[string]Target) string {
	base := want
	if len(base) > cutLen {
		base = base[:cutLen]
	}
	in := loser.Server + "\x00" + loser.Name
	for attempt := 0; ; attempt++ {
		h := in
		if attempt > 0 {
			h = in + "\x00" + strconv.Itoa(attempt)
		}
		pub := base + "_" + hash8(h)
		if _, ok := taken[pub]; !ok {
			return pub
		}
	}
}

func (t *Table) add(public string, target Target) {
	t.entries = append(t.entries, Entry{Public: public, Target: target})
	t.byPublic[public] = target
	t.byTarget[target] = public
}

// Lookup returns the target of a public name. It is one map lookup and does
// not allocate; the name is never parsed.
func (t *Table) Lookup(public string) (Target, bool) {
	if t == nil {
		return Target{}, false
	}
	target, ok := t.byPublic[public]
	return target, ok
}

// Public returns the public name of the upstream item name on server.
func (t *Table) Public(server, name string) (string, bool) {
	if t == nil {
		return "", false
	}
	public, ok := t.byTarget[Target{Server: server, Name: name}]
	return public, ok
}

// Entries returns every entry sorted by public name. The slice is shared:
// callers must not modify it.
func (t *Table) Entries() []Entry {
	if t == nil {
		return nil
	}
	return t.entries
}

// Len returns the number of entries.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}
