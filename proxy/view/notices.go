package view

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// What building a view finds for an operator: names that several servers
// want, and definitions the trust boundary flagged or could not publish.
// Views are built again on every catalog change and state change of an
// upstream and on every reload, with mostly the same catalogs, so these
// notes are not logged while a view is built: each generation gathers
// them from its views (genNotes), /status shows them all, and noticeLog
// logs only what is new since the last generation. See "First contact",
// item 5.

// CollisionStatus is a name that more than one server wants in a view: a
// public tool or prompt name, or a resource URI.
type CollisionStatus struct {
	Kind   string           `json:"kind"` // "tool", "prompt" or "resource"
	Name   string           `json:"name"`
	Winner string           `json:"winner"` // the server that has the name
	Losers []CollisionLoser `json:"losers"`
}

// CollisionLoser is a server that lost a collision. Its tool or prompt is
// published as Renamed; a resource is not served from it at all.
type CollisionLoser struct {
	Server  string `json:"server"`
	Renamed string `json:"renamed,omitempty"`
}

// FindingStatus is a definition the trust boundary flagged or skipped.
type FindingStatus struct {
	Server string `json:"server"`
	Kind   string `json:"kind"` // "tool", "prompt", "resource" or "template"
	Name   string `json:"name"` // as the server lists it (a URI or URI template for resources)
	// Patterns are the suspicious patterns found in the definition, and
	// Places the parts of it they were found in ("description",
	// "inputSchema", …); Blocked says it was withheld for them
	// (onSuspicious block, one strong or two weak patterns).
	Patterns []string `json:"patterns,omitempty"`
	Places   []string `json:"places,omitempty"`
	Blocked  bool     `json:"blocked,omitempty"`
	// Skipped says why the definition could not be published at all.
	Skipped string `json:"skipped,omitempty"`
}

// errWithheld is a definition withheld for its suspicious patterns.
var errWithheld = errors.New("definition withheld: it matched suspicious patterns")

// viewNotes is what building one view found.
type viewNotes struct {
	collisions []collisionNote
	findings   []FindingStatus
}

type collisionNote struct{ kind, name, winner, loser, renamed string }

func (n *viewNotes) collide(kind, name, winner, loser, renamed string) {
	n.collisions = append(n.collisions, collisionNote{kind, name, winner, loser, renamed})
}

// suspicious notes a definition with findings, withheld or not.
func (n *viewNotes) suspicious(server, kind, name string, findings []sanitize.Finding, blocked bool) {
	if len(findings) > 0 {
		n.findings = append(n.findings, FindingStatus{Server: server, Kind: kind, Name: name, Patterns: FindingIDs(findings), Places: findingPlaces(findings), Blocked: blocked})
	}
}

// findingPlaces are the places of findings, each once, in order.
func findingPlaces(fs []sanitize.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Where != "" && !slices.Contains(out, f.Where) {
			out = append(out, f.Where)
		}
	}
	return out
}

// Redacted is n's findings with redact applied to why a definition was
// skipped (an error may quote upstream text). It is nil for a nil n.
func (n *Notes) Redacted(redact func(string) string) []FindingStatus {
	if n == nil {
		return nil
	}
	out := make([]FindingStatus, 0, len(n.Findings))
	for _, f := range n.Findings {
		f.Skipped = redact(f.Skipped)
		out = append(out, f)
	}
	return out
}

// skipped notes a definition that could not be published.
func (n *viewNotes) skipped(server, kind, name string, err error) {
	n.findings = append(n.findings, FindingStatus{Server: server, Kind: kind, Name: name, Skipped: err.Error()})
}

// definitionOK notes a definition the trust boundary found suspicious and
// reports whether it may be published: not with onSuspicious block when
// its findings withhold it (one strong or two weak, as for results).
func (n *viewNotes) definitionOK(snap *Snapshot, server, kind, name string, findings []sanitize.Finding) bool {
	block := snap.Sanitize.OnSuspicious == sanitize.ModeBlock && sanitize.Withholds(findings)
	n.suspicious(server, kind, name, findings, block)
	return !block
}

// Notes is what every view of a generation found, each thing once, in
// a stable order.
type Notes struct {
	Collisions []CollisionStatus // by kind, name, winner
	Findings   []FindingStatus   // by server, kind, name
}

// GatherNotes merges the notes of views.
func GatherNotes(views map[string]*View) *Notes {
	type cKey struct{ kind, name, winner string }
	losers := map[cKey]map[string]string{} // loser server -> renamed
	type fKey struct{ server, kind, name string }
	findings := map[fKey]FindingStatus{}
	for _, v := range views {
		for _, c := range v.Notes.collisions {
			k := cKey{c.kind, c.name, c.winner}
			if losers[k] == nil {
				losers[k] = map[string]string{}
			}
			losers[k][c.loser] = c.renamed
		}
		for _, f := range v.Notes.findings {
			findings[fKey{f.Server, f.Kind, f.Name}] = f
		}
	}
	g := &Notes{}
	for k, ls := range losers {
		c := CollisionStatus{Kind: k.kind, Name: k.name, Winner: k.winner}
		for _, s := range SortedKeys(ls) {
			c.Losers = append(c.Losers, CollisionLoser{Server: s, Renamed: ls[s]})
		}
		g.Collisions = append(g.Collisions, c)
	}
	slices.SortFunc(g.Collisions, func(a, b CollisionStatus) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Winner, b.Winner))
	})
	for _, f := range findings {
		g.Findings = append(g.Findings, f)
	}
	slices.SortFunc(g.Findings, func(a, b FindingStatus) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return g
}

// maxLoggedNames bounds the names one log line lists.
const maxLoggedNames = 10

// NoticeLog remembers what was logged of the generations' notes, so that
// each collision and finding is logged when it appears and not again while
// it stays. One that goes away is forgotten: if it comes back, it is
// logged again. Its methods require Proxy.pubMu.
type NoticeLog struct {
	names    map[string]bool            // contested names: kind + " " + name
	findings map[string]map[string]bool // by server: findingKey of each finding
}

// Report logs what in g is new: every new contested name in one line, and
// per server one line for its new suspicious definitions and one for its
// new skipped ones.
func (l *NoticeLog) Report(log hclog.Logger, g *Notes) {
	names := map[string]bool{}
	var fresh []string
	for _, c := range g.Collisions {
		k := c.Kind + " " + c.Name
		if !names[k] && !l.names[k] {
			fresh = append(fresh, k)
		}
		names[k] = true
	}
	l.names = names
	if len(fresh) > 0 {
		log.Warn("name collisions", "count", len(fresh), "names", firstNames(fresh),
			"reason", "more than one server lists these names; each is served by one of them, see /status")
	}

	seen := map[string]map[string]bool{}
	var suspicious, skipped []FindingStatus
	for _, f := range g.Findings {
		k := findingKey(f)
		if seen[f.Server] == nil {
			seen[f.Server] = map[string]bool{}
		}
		seen[f.Server][k] = true
		if l.findings[f.Server][k] {
			continue
		}
		if f.Skipped != "" {
			skipped = append(skipped, f)
		} else {
			suspicious = append(suspicious, f)
		}
	}
	l.findings = seen
	for _, fs := range byServer(suspicious) {
		var patterns []string
		blocked := false
		for _, f := range fs {
			patterns = append(patterns, f.Patterns...)
			blocked = blocked || f.Blocked
		}
		slices.Sort(patterns)
		log.Warn("suspicious definitions", "upstream", fs[0].Server, "count", len(fs), "names", findingNames(fs),
			"reason", slices.Compact(patterns), "blocked", blocked)
	}
	for _, fs := range byServer(skipped) {
		log.Warn("definitions skipped", "upstream", fs[0].Server, "count", len(fs), "names", findingNames(fs), "error", fs[0].Skipped)
	}
}

// findingKey is everything about a finding that, changed, is logged again.
func findingKey(f FindingStatus) string {
	return strings.Join([]string{f.Kind, f.Name, strings.Join(f.Patterns, ","), f.Skipped, boolString(f.Blocked)}, "\x00")
}

func boolString(b bool) string {
	if b {
		return "blocked"
	}
	return ""
}

// byServer splits findings, sorted by server, into runs of one server.
func byServer(fs []FindingStatus) [][]FindingStatus {
	var out [][]FindingStatus
	for i := 0; i < len(fs); {
		j := i + 1
		for j < len(fs) && fs[j].Server == fs[i].Server {
			j++
		}
		out = append(out, fs[i:j])
		i = j
	}
	return out
}

// findingNames names findings, as kind and name, at most maxLoggedNames.
func findingNames(fs []FindingStatus) []string {
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		names = append(names, f.Kind+" "+f.Name)
	}
	return firstNames(names)
}

// firstNames is names cut to maxLoggedNames, with a last entry counting
// the rest.
func firstNames(names []string) []string {
	if len(names) <= maxLoggedNames {
		return names
	}
	out := slices.Clone(names[:maxLoggedNames])
	return append(out, "and "+strconv.Itoa(len(names)-maxLoggedNames)+" more")
}
