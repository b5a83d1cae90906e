package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// sixNPMServers is an mcpServers map of six npm reference servers that list
// their tools offline, each the way a user configures it in Claude Code,
// and the tools each lists when asked directly (by server name).
func sixNPMServers(t *testing.T, dir string) (map[string]any, map[string][]string) {
	t.Helper()
	env := npmEnv(t)
	files := filepath.Join(dir, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	argv := map[string][]string{
		"everything": {npmBin(t, "mcp-server-everything")},
		"files":      {npmBin(t, "mcp-server-filesystem"), files},
		"memory":     {npmBin(t, "mcp-server-memory")},
		// Lists its one tool without reaching the database.
		"postgres": {npmBin(t, "mcp-server-postgres"), "postgresql://127.0.0.1:1/none"},
		"thinking": {npmBin(t, "mcp-server-sequential-thinking")},
		// Lists its tools without a token; calls would need one.
		"github": {npmBin(t, "mcp-server-github")},
	}
	servers := map[string]any{}
	tools := map[string][]string{}
	for name, a := range argv {
		servers[name] = map[string]any{
			"type": "stdio", "command": a[0], "args": a[1:],
			"env": map[string]string{"PATH": strings.TrimPrefix(env[0], "PATH="), "MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")},
		}
		tools[name] = directTools(t, a, env, dir)
	}
	return servers, tools
}

// firstRequestMCPTools runs one Claude Code session with the given MCP
// servers (and extra environment) and returns the MCP tools (mcp__*) its first model request
// offered, and how long after the start that request came.
func firstRequestMCPTools(t *testing.T, servers map[string]any, env ...string) ([]string, time.Duration) {
	t.Helper()
	a := newClaudeCode(t, nil)
	a.env = append(a.env, env...)
	res := claudePrint(t, a, servers, "Say done.")
	turns := a.model.turns()
	if len(turns) == 0 {
		t.Fatalf("Claude Code made no model request; result %v", res)
	}
	return withPrefix(turns[0].Tools, "mcp__"), turns[0].At.Sub(a.started).Round(time.Millisecond)
}

// sameNames maps Claude Code's names of a server's tool, direct
// (mcp__<server>__<tool>) and through switchboard
// (mcp__switchboard__mcp_<server>_<tool>), to one: <server>/<tool>.
func sameNames(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		server, tool, _ := strings.Cut(strings.TrimPrefix(n, "mcp__"), "__")
		if server == "switchboard" && strings.HasPrefix(tool, "mcp_") {
			server, tool, _ = strings.Cut(strings.TrimPrefix(tool, "mcp_"), "_")
		}
		out = append(out, server+"/"+tool)
	}
	return out
}

// perServer counts names by server (server names here have no "_").
func perServer(names []string) map[string]int {
	out := map[string]int{}
	for _, n := range sameNames(names) {
		server, _, _ := strings.Cut(n, "/")
		out[server]++
	}
	return out
}

// measurePairs is how many direct/switchboard pairs are measured.
const measurePairs = 3

// TestClaudeCodeFirstRequestToolsDirectVsSwitchboard measures, in pairs,
// the MCP tools in Claude Code's first model request with six npm servers
// configured directly and with the same six behind switchboard over stdio,
// with no catalog cache: switchboard's first request must carry at least as
// many.
func TestClaudeCodeFirstRequestToolsDirectVsSwitchboard(t *testing.T) {
	dir := t.TempDir()
	servers, tools := sixNPMServers(t, dir)
	total := 0
	for _, names := range tools {
		total += len(names)
	}
	// claude -p waits for each MCP server up to MCP_TIMEOUT (30 s), so its
	// first request directly carries every server that started by then;
	// firstListTimeout set to the same patience makes switchboard's first
	// list wait as long (its 4 s default is for an interactive session,
	// which sends its first request after about 4.4 s whatever is up).
	sbConfig := writeConfig(t, dir, map[string]any{"mcpServers": servers, "firstListTimeout": 30000, "catalogCache": "off"})
	viaSB := map[string]any{"switchboard": switchboardStdio(sbConfig)}
	for pair := 1; pair <= measurePairs; pair++ {
		direct, directAfter := firstRequestMCPTools(t, servers)
		via, viaAfter := firstRequestMCPTools(t, viaSB)
		t.Logf("pair %d: the first request (after %s direct, %s through switchboard) carries %d MCP tools direct %v, %d through switchboard %v (to a go-sdk client the servers list %d)",
			pair, directAfter, viaAfter, len(direct), perServer(direct), len(via), perServer(via), total)
		if only := lacking(sameNames(via), sameNames(direct)); len(only) > 0 {
			t.Logf("pair %d: only through switchboard: %v", pair, only)
		}
		if only := lacking(sameNames(direct), sameNames(via)); len(only) > 0 {
			t.Logf("pair %d: only direct: %v", pair, only)
		}
		if len(via) < len(direct) {
			t.Errorf("pair %d: switchboard's first request carries %d tools, fewer than direct's %d", pair, len(via), len(direct))
		}
	}
}

// cacheSlowStart is how long the slow server of the catalog cache test
// takes to start, and cacheMCPTimeout how long Claude Code waits for an MCP
// server (MCP_TIMEOUT, ms; its default is 30 s): shorter, so that only a
// catalog from an earlier run can put the tools in the first request.
const (
	cacheSlowStart  = "15s"
	cacheMCPTimeout = "8000"
)

// TestClaudeCodeFirstRequestFromCatalogCache: six npm servers and one that
// takes longer to start than Claude Code waits for an MCP server, behind
// switchboard over stdio. With a catalog from an earlier run on disk
// (catalogCache), every one of ten fresh Claude Code sessions gets every
// tool in its first model request, the slow server's included.
func TestClaudeCodeFirstRequestFromCatalogCache(t *testing.T) {
	dir := t.TempDir()
	servers, _ := sixNPMServers(t, dir)
	servers["slow"] = fixtureServer("slow", "--slow-start", cacheSlowStart)
	cache := filepath.Join(dir, "catalog-cache")
	cfg := map[string]any{"mcpServers": servers, "catalogCache": cache}
	path := writeConfig(t, dir, cfg)

	// The earlier run: a switchboard that serves until every server is up.
	var want []string
	s := startSwitchboardIn(t, t.TempDir(), dir, cfg, nil)
	cs := s.client(t, nil)
	testutil.Eventually(t, 120*time.Second, "every server's tools", func() bool {
		tools := listTools(t, cs)
		want = want[:0]
		for name := range tools {
			want = append(want, ccPrefix+name)
		}
		return len(perServer(want)) == len(servers)
	})
	cs.Close()
	s.stop(10 * time.Second)
	sort.Strings(want)
	entries, _ := os.ReadDir(cache)
	t.Logf("the earlier run listed %d tools of %d servers; the cache directory holds %d entries", len(want), len(servers), len(entries))

	viaSB := map[string]any{"switchboard": switchboardStdio(path)}
	const starts = 10
	complete := 0
	for start := 1; start <= starts; start++ {
		got, after := firstRequestMCPTools(t, viaSB, "MCP_TIMEOUT="+cacheMCPTimeout)
		if l := lacking(want, got); len(l) > 0 {
			t.Errorf("start %d: the first request, after %s, lacks %d of %d tools: %s", start, after, len(l), len(want), summarize(l))
			continue
		}
		t.Logf("start %d: the first request, after %s, carries every tool", start, after)
		complete++
	}
	t.Logf("%d of %d starts with a cached catalog: every tool in the first request", complete, starts)
	if len(entries) != len(servers) {
		t.Errorf("the cache holds %d catalogs, want one per server (%d)", len(entries), len(servers))
	}
}

// summarize lists names, cut after ten.
func summarize(names []string) string {
	if len(names) <= 10 {
		return strings.Join(names, " ")
	}
	return fmt.Sprintf("%s … (%d more)", strings.Join(names[:10], " "), len(names)-10)
}
