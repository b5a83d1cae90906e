package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Other MCP clients keep their own keys in the files switchboard reads.
// The rules (docs/client-configs.md):
//
//   - switchboard's top-level keys are the fields of Config, plus "servers"
//     (VS Code's name for mcpServers);
//   - a key in clientTopKeys is another client's: it is skipped and noted;
//   - when the file holds one of those, it is recognisably that client's
//     file, and every other unknown top-level key is skipped as the
//     client's too, unless it differs from one of ours only in case (a
//     typo stays an error);
//   - otherwise an unknown top-level key is an error;
//   - inside a server entry only the keys in clientServerKeys are skipped;
//     any other unknown key stays an error, since mcpServers is our
//     section.

// clientTopKeys maps top-level keys that only other clients write to the
// client that writes them.
var clientTopKeys = map[string]string{
	"globalShortcut":           "Claude Desktop",
	"preferences":              "Claude Desktop",
	"isUsingBuiltInNodeForMcp": "Claude Desktop",
	"inputs":                   "VS Code",
	"numStartups":              "Claude Code",
	"installMethod":            "Claude Code",
	"autoUpdates":              "Claude Code",
	"projects":                 "Claude Code",
	"userID":                   "Claude Code",
	"hasCompletedOnboarding":   "Claude Code",
}

// clientServerKeys maps per-server keys that other clients write and that
// switchboard has no use for (it asks no one before a call) to the client.
var clientServerKeys = map[string]string{
	"autoApprove":          "Cline",
	"alwaysAllow":          "Cline",
	"watchPaths":           "Roo Code",
	"dev":                  "VS Code",
	"trust":                "Gemini CLI",
	"description":          "Gemini CLI",
	"oauth":                "Gemini CLI",
	"authProviderType":     "Gemini CLI",
	"targetAudience":       "Gemini CLI",
	"targetServiceAccount": "Gemini CLI",
}

// ownOAuth reports whether a server's key k is switchboard's own oauth
// block (oauth.go), which names a grant; Gemini CLI's names none.
func ownOAuth(k string, v any) bool {
	m, ok := v.(map[string]any)
	_, grant := m["grant"]
	return k == "oauth" && ok && grant
}

// clineMarkers are the server keys only Cline (and Roo Code, its fork)
// write. A file with one of them in any server is a Cline file, whose
// timeouts are seconds.
var clineMarkers = []string{"autoApprove", "alwaysAllow"}

// Notes is what loading a config decided that is not an error.
type Notes struct {
	// Client names the client whose file this is when it is recognisably
	// another client's ("Claude Desktop", "VS Code", "Cline", …); "" for
	// a file with nothing of another client's.
	Client string
	// Ignored lists the field paths of the other client's keys that were
	// skipped, sorted.
	Ignored []string
	// Info lists values read in another client's way (a Cline timeout in
	// seconds), each with its path.
	Info []*FieldError
	// Warnings lists what still loads but is likely wrong: a variable that
	// is not set, a timeout too short to start anything. Config.Warnings
	// adds the credentials written in plain text.
	Warnings []*FieldError

	// expanded holds the paths of values in which a variable was put in
	// (unset, or its default): what is left there is not what the file
	// wrote.
	expanded map[string]bool
}

// IgnoredLine is the one line that says which keys were skipped, e.g.
// `Claude Desktop: globalShortcut, preferences`, or "" when none were.
func (n Notes) IgnoredLine() string {
	if len(n.Ignored) == 0 {
		return ""
	}
	who := n.Client
	if who == "" {
		who = "other clients"
	}
	return who + ": " + strings.Join(n.Ignored, ", ")
}

func (n *Notes) ignore(client, path string) {
	n.Ignored = append(n.Ignored, path)
	switch {
	case n.Client == "":
		n.Client = client
	case !strings.Contains(n.Client, client):
		n.Client += ", " + client
	}
}

func (n *Notes) info(path, format string, args ...any) {
	n.Info = append(n.Info, &FieldError{Path: path, Reason: fmt.Sprintf(format, args...)})
}

func (n *Notes) warn(path, format string, args ...any) {
	n.Warnings = append(n.Warnings, &FieldError{Path: path, Reason: fmt.Sprintf(format, args...)})
}

func (n *Notes) sort() {
	sort.Strings(n.Ignored)
	byPath := func(l []*FieldError) {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Path < l[j].Path })
	}
	byPath(n.Info)
	byPath(n.Warnings)
}

// clientShape is what the client pass found in the raw document, for the
// steps after decoding.
type clientShape struct {
	serversKey string            // the key the servers came from when not mcpServers ("servers", "context_servers", …)
	cline      bool              // a Cline file: timeouts are seconds
	gemini     bool              // servers are read the way Gemini CLI reads them
	dialect    *dialect          // the client whose settings file this is, if any
	urlKeys    map[string]string // server key -> the key its URL came from, when not "url"
}

// clientPass rewrites the raw top-level object m in place to switchboard's
// schema: it removes the other clients' keys (noting them), moves VS
// Code's servers to mcpServers, and renames the per-server aliases. It
// reports the problems it finds (both servers and mcpServers, a renamed
// key next to the key it names, keys switchboard will not silently drop).
func clientPass(m map[string]any, notes *Notes, fail func(path, format string, args ...any)) clientShape {
	var sh clientShape
	if d := dialectOf(m); d != nil {
		sh.dialect = d
		sh.serversKey = dialectTop(d, m, notes, fail)
	}
	ours := structFields(configType)
	marked := false
	for k := range m {
		if _, ok := clientTopKeys[k]; ok {
			marked = true
		}
	}
	markedBy := clientOf(m)
	for _, k := range sortedKeys(m) {
		if _, ok := ours[k]; ok || k == "servers" {
			continue
		}
		if c, ok := clientTopKeys[k]; ok {
			notes.ignore(c, joinKey("", k))
			delete(m, k)
			continue
		}
		if marked && caseSlip(k, ours) == "" {
			notes.ignore(markedBy, joinKey("", k))
			delete(m, k)
		}
	}
	if srv, ok := m["servers"]; ok {
		if _, both := m["mcpServers"]; both {
			fail("servers", `VS Code's name for mcpServers; the file has both, keep one`)
		} else {
			sh.serversKey = "servers"
			m["mcpServers"] = srv
			if notes.Client == "" {
				notes.Client = "VS Code"
			}
		}
		delete(m, "servers")
	}
	servers, _ := m["mcpServers"].(map[string]any)
	sh.gemini = sh.dialect == geminiDialect
	for _, k := range sortedKeys(servers) {
		if e, ok := servers[k].(map[string]any); ok {
			for _, mk := range clineMarkers {
				if _, ok := e[mk]; ok {
					sh.cline = true
				}
			}
			if hasAny(e, geminiServerKeys) {
				sh.gemini = true
			}
		}
	}
	top := sh.serversKey
	if top == "" {
		top = "mcpServers"
	}
	for _, k := range sortedKeys(servers) {
		e, ok := servers[k].(map[string]any)
		if !ok {
			continue
		}
		r := &rewriter{doc: m, path: joinKey(top, k), name: k, e: e, notes: notes, fail: fail}
		if sh.dialect != nil {
			r.client = sh.dialect.client
		}
		if !serverPass(r, &sh) {
			delete(servers, k)
			notes.ignore(r.client, r.path)
			notes.info(r.path, "%s", r.dropped)
			continue
		}
		if r.urlKey != "" {
			if sh.urlKeys == nil {
				sh.urlKeys = map[string]string{}
			}
			sh.urlKeys[k] = r.urlKey
		}
	}
	if sh.cline {
		notes.Client = "Cline"
	}
	return sh
}

// dialectTop reads the top level of a file of d's client: it runs d's top
// step, skips every top-level key but the servers and switchboard's own
// (noting each) and puts the servers under mcpServers. It returns the key they came from when
// not mcpServers.
func dialectTop(d *dialect, m map[string]any, notes *Notes, fail func(path, format string, args ...any)) string {
	notes.Client = d.client
	if d.top != nil {
		servers, _ := m[d.key].(map[string]any)
		d.top(&rewriter{client: d.client, doc: m, notes: notes, fail: fail}, servers)
	}
	ours := structFields(configType)
	for _, k := range sortedKeys(m) {
		if _, own := ours[k]; k == d.key || (own && !slices.Contains(d.theirs, k)) {
			continue
		}
		notes.ignore(d.client, joinKey("", k))
		delete(m, k)
	}
	if d.key == "mcpServers" {
		return ""
	}
	if srv, ok := m[d.key]; ok {
		m["mcpServers"] = srv
		delete(m, d.key)
	}
	return d.key
}

// clientOf names the client whose marker key m holds.
func clientOf(m map[string]any) string {
	for _, k := range sortedKeys(m) {
		if c, ok := clientTopKeys[k]; ok {
			return c
		}
	}
	return "another client"
}

// serverPass rewrites one raw server entry to switchboard's keys: the
// dialect's own step, then the keys any client may write. It returns
// false for an entry the dialect leaves out.
func serverPass(r *rewriter, sh *clientShape) bool {
	if d := sh.dialect; d != nil && d.entry != nil && !d.entry(r) {
		return false
	}
	if sh.gemini {
		geminiEntry(r)
	}
	e, path := r.e, r.path
	for _, k := range sortedKeys(e) {
		if c, ok := clientServerKeys[k]; ok && !ownOAuth(k, e[k]) {
			r.notes.ignore(c, joinKey(path, k))
			delete(e, k)
		}
	}
	if _, ok := e["disabledTools"]; ok {
		// Dropping it would publish tools the user turned off.
		r.fail(joinKey(path, "disabledTools"), `not read by switchboard, and ignoring it would publish the tools it turns off; deny them with "tools": {"deny": [...]} (public names, see docs/client-configs.md)`)
		delete(e, "disabledTools")
	}
	r.renameAs("Windsurf", "serverUrl", "url")
	if has(e, "httpUrl") {
		r.renameAs("Gemini CLI", "httpUrl", "url")
		r.setDefault("type", "http")
	}
	if t, ok := e["transportType"]; ok {
		// Older Cline files name the transport this way.
		if ty, both := e["type"]; both && !sameJSON(t, ty) {
			r.fail(joinKey(path, "transportType"), "contradicts type; set one of them")
		} else if !both {
			e["type"] = t
		}
		delete(e, "transportType")
	}
	toolFilter(r)
	return true
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// clineTimeoutMax bounds a Cline timeout in seconds that still converts to
// an int of milliseconds on every platform.
const clineTimeoutMax = 1 << 20

// shortTimeoutMS is the timeout below which a switchboard file's timeout is
// most likely seconds written by mistake: no server starts that fast.
const shortTimeoutMS = 1000

// timeouts applies the Cline rule to the decoded servers: in a Cline file
// timeout is seconds and becomes milliseconds; elsewhere it stays
// milliseconds and a value too short to start anything is warned about.
func (sh clientShape) timeouts(c *Config, notes *Notes) {
	top := c.serversPath()
	for _, k := range sortedKeys(c.MCPServers) {
		s := c.MCPServers[k]
		if s == nil || s.TimeoutMS == nil {
			continue
		}
		p := joinKey(top, k) + ".timeout"
		t := *s.TimeoutMS
		switch {
		case sh.cline && t > 0 && t <= clineTimeoutMax:
			ms := t * 1000
			s.TimeoutMS = &ms
			notes.info(p, "%d read as seconds, Cline's unit (the file has autoApprove or alwaysAllow)", t)
		case !sh.cline && t > 0 && t < shortTimeoutMS:
			notes.warn(p, "%d ms is too short to start a server; switchboard's timeout is milliseconds (write %d for %d s)", t, t*1000, t)
		}
	}
}

// serversPath is the key the servers came from, for field paths.
func (c *Config) serversPath() string {
	if c.serversKey != "" {
		return c.serversKey
	}
	return "mcpServers"
}

// urlPath is the path of s's URL field under path.
func (s *Server) urlPath(path string) string {
	if s.urlKey != "" {
		return path + "." + s.urlKey
	}
	return path + ".url"
}
