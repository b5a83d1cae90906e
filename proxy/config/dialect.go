package config

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/mcp-switchboard/switchboard/router"
)

// Some clients keep their MCP servers among their own settings, under a
// key of their own and in their own shape (docs/client-configs.md): Zed
// (context_servers), Codex CLI (mcp_servers in TOML), Goose (extensions
// in YAML), Continue (a list of mcpServers), Amazon Q agents and Gemini
// CLI. Such a file is that client's settings file: switchboard reads its
// servers, maps what means something to it onto its own keys, and skips
// every other top-level key that is not one of its own with a note.

// A dialect is one such client's way of writing servers.
type dialect struct {
	client string
	// key is the top-level key that holds the servers.
	key string
	// theirs lists the client's top-level keys that have the name of one
	// of switchboard's (Zed's telemetry, Gemini CLI's tools); like every
	// other key of the client's they are skipped. switchboard's other
	// top-level keys are read as usual (a chart's shutdownTimeout).
	theirs []string
	// top rewrites the document before its servers are read (Continue's
	// list, Amazon Q's tools, Gemini's server allow list); may be nil.
	top func(r *rewriter, servers map[string]any)
	// entry rewrites one server entry to switchboard's keys. It returns
	// false for an entry switchboard cannot run, which is left out with
	// a note. May be nil.
	entry func(r *rewriter) bool
}

// dialects in the order they are tried: the first whose marker the
// document holds wins.
var dialects = []struct {
	is func(m map[string]any) bool
	d  *dialect
}{
	{func(m map[string]any) bool { return has(m, "context_servers") }, zedDialect},
	{func(m map[string]any) bool { return has(m, "mcp_servers") }, codexDialect},
	{isGoose, gooseDialect},
	{isContinue, continueDialect},
	{func(m map[string]any) bool { return hasAny(m, amazonQMarkers) }, amazonQDialect},
	{func(m map[string]any) bool { return hasAny(m, geminiMarkers) }, geminiDialect},
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func hasAny(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if has(m, k) {
			return true
		}
	}
	return false
}

// dialectOf is the dialect of the document m, or nil for a file in
// switchboard's own shape (Claude Desktop's, Cursor's, VS Code's …).
func dialectOf(m map[string]any) *dialect {
	for _, c := range dialects {
		if c.is(m) {
			return c.d
		}
	}
	return nil
}

// rewriter rewrites one raw server entry (or, in a dialect's top step,
// the document) and reports what it did.
type rewriter struct {
	client string
	doc    map[string]any // the whole document
	path   string         // the entry's path as written
	name   string         // the server key
	e      map[string]any // the entry
	notes  *Notes
	fail   func(path, format string, args ...any)
	urlKey string // the key the URL came from when not "url"
	// dropped says why an entry's dialect left it out.
	dropped string
}

// skip removes the keys of e that mean nothing to switchboard, noting
// each.
func (r *rewriter) skip(keys ...string) {
	for _, k := range keys {
		if has(r.e, k) {
			r.notes.ignore(r.client, joinKey(r.path, k))
			delete(r.e, k)
		}
	}
}

// rename moves e[from] to e[to]; an entry with both is an error.
func (r *rewriter) rename(from, to string) { r.renameAs(r.client, from, to) }

// renameAs is rename for a key client writes.
func (r *rewriter) renameAs(client, from, to string) {
	v, ok := r.e[from]
	if !ok {
		return
	}
	delete(r.e, from)
	if has(r.e, to) {
		r.fail(joinKey(r.path, from), "%s's name for %s; the entry has both, keep one", client, to)
		return
	}
	r.e[to] = v
	if to == "url" {
		r.urlKey = from
	}
}

// setDefault sets e[k] to v unless e has k.
func (r *rewriter) setDefault(k string, v any) {
	if !has(r.e, k) {
		r.e[k] = v
	}
}

// object is e[k] as an object, created when absent; nil (after a failure)
// when e[k] is something else.
func (r *rewriter) object(k string) map[string]any {
	switch v := r.e[k].(type) {
	case nil:
		o := map[string]any{}
		r.e[k] = o
		return o
	case map[string]any:
		return v
	}
	r.fail(joinKey(r.path, k), "want an object, got %s", kindName(r.e[k]))
	return nil
}

// seconds moves e[from], a number of seconds, to each key of to in
// milliseconds; a key of to that e already has keeps its value.
func (r *rewriter) seconds(from string, to ...string) {
	v, ok := r.e[from]
	if !ok {
		return
	}
	delete(r.e, from)
	n, isNum := v.(json.Number)
	f, err := n.Float64()
	if !isNum || err != nil || f <= 0 || f > clineTimeoutMax {
		r.fail(joinKey(r.path, from), "want a positive number of seconds, got %s", kindName(v))
		return
	}
	ms := json.Number(strconv.FormatInt(int64(math.Round(f*1000)), 10))
	for _, k := range to {
		r.setDefault(k, ms)
	}
	r.notes.info(joinKey(r.path, from), "%s s read as %s ms (%s)", n, ms, strings.Join(to, ", "))
}

// envRefs adds NAME: ${NAME} to env for each name in the list e[from]
// (the variables the client passes on from its own environment), unless
// env sets NAME.
func (r *rewriter) envRefs(from string) {
	v, ok := r.e[from]
	if !ok {
		return
	}
	delete(r.e, from)
	l, isList := v.([]any)
	if !isList {
		r.fail(joinKey(r.path, from), "want a list of variable names, got %s", kindName(v))
		return
	}
	if len(l) == 0 {
		return
	}
	env := r.object("env")
	if env == nil {
		return
	}
	for i, x := range l {
		name, _ := x.(string)
		if !envNameRE.MatchString(name) {
			r.fail(joinIndex(joinKey(r.path, from), i), "want an environment variable name")
			continue
		}
		if !has(env, name) {
			env[name] = "${" + name + "}"
		}
	}
}

// moveObject merges the object e[from] into the object e[to]; a key in
// both is an error.
func (r *rewriter) moveObject(from, to string) {
	v, ok := r.e[from]
	if !ok {
		return
	}
	delete(r.e, from)
	src, isObj := v.(map[string]any)
	if !isObj {
		r.fail(joinKey(r.path, from), "want an object, got %s", kindName(v))
		return
	}
	dst := r.object(to)
	if dst == nil {
		return
	}
	for _, k := range sortedKeys(src) {
		if has(dst, k) {
			r.fail(joinKey(joinKey(r.path, from), k), "also set in %s; set it once", to)
			continue
		}
		dst[k] = src[k]
	}
}

// eachString calls fn with a pointer to every string in v, recursively.
func eachString(v any, fn func(s string) string) any {
	switch x := v.(type) {
	case string:
		return fn(x)
	case []any:
		for i := range x {
			x[i] = eachString(x[i], fn)
		}
	case map[string]any:
		for k := range x {
			x[k] = eachString(x[k], fn)
		}
	}
	return v
}

// toolFilter turns Gemini CLI's includeTools and excludeTools (also where
// other clients' own names for them were renamed to these) into the
// server's tools rules: allow and deny globs on the public names of the
// tools they list.
func toolFilter(r *rewriter) {
	inc, hasInc := r.e["includeTools"]
	exc, hasExc := r.e["excludeTools"]
	if !hasInc && !hasExc {
		return
	}
	delete(r.e, "includeTools")
	delete(r.e, "excludeTools")
	rules := r.object("tools")
	if rules == nil {
		return
	}
	prefix, _ := r.e["toolPrefix"].(string)
	bare := r.e["namespace"] == false
	add := func(from, to string, v any) {
		l, ok := v.([]any)
		have, okHave := rules[to].([]any)
		if !ok || (!okHave && rules[to] != nil) {
			r.fail(joinKey(r.path, from), "want a list of tool names, and tools.%s a list", to)
			return
		}
		for i, x := range l {
			s, _ := x.(string)
			if s == "" {
				r.fail(joinIndex(joinKey(r.path, from), i), "want a tool name")
				continue
			}
			have = append(have, toolGlob(router.Prefix(r.name, prefix), bare, s))
		}
		rules[to] = have
	}
	if hasInc {
		add("includeTools", "allow", inc)
	}
	if hasExc {
		add("excludeTools", "deny", exc)
	}
}

// toolGlob is the glob on public names that matches the tool (or tool
// pattern, with * and ?) of the server with this prefix.
func toolGlob(prefix string, bare bool, tool string) string {
	if !strings.ContainsAny(tool, "*?") {
		if bare {
			return router.BareName(tool)
		}
		return router.PublicName(prefix, tool)
	}
	pat := strings.Map(func(c rune) rune {
		if c == '*' || c == '?' || c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			return c
		}
		return '_'
	}, tool)
	if bare {
		return pat
	}
	return router.PublicName(prefix, "") + pat
}
