package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// firstListRuns is how many fresh starts each transport is tried with.
const firstListRuns = 20

// threeNPMServers is a config of three npm reference servers over stdio,
// and the public names of every tool they list when asked directly.
func threeNPMServers(t *testing.T, dir string) (map[string]any, []string) {
	t.Helper()
	env := npmEnv(t)
	files := filepath.Join(dir, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	servers := map[string][]string{
		"everything": {npmBin(t, "mcp-server-everything")},
		"memory":     {npmBin(t, "mcp-server-memory")},
		"files":      {npmBin(t, "mcp-server-filesystem"), files},
	}
	cfg := map[string]any{}
	var want []string
	for name, argv := range servers {
		cfg[name] = map[string]any{
			"command": argv[0], "args": argv[1:],
			"env": map[string]string{"PATH": env[0][len("PATH="):], "MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")},
		}
		for _, tool := range directTools(t, argv, env, dir) {
			want = append(want, "mcp_"+name+"_"+tool)
		}
	}
	sort.Strings(want)
	return map[string]any{"mcpServers": cfg}, want
}

// directTools lists a server's tools by connecting to it without
// switchboard.
func directTools(t *testing.T, argv, env []string, dir string) []string {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cmd := newCmd(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), append(env, "MEMORY_FILE_PATH="+filepath.Join(dir, "memory.jsonl"))...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%s directly: %v", argv[0], err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if len(names) == 0 {
		t.Fatalf("%s lists no tools directly", argv[0])
	}
	return names
}

// missing lists the names of want that got lacks.
func missing(want []string, got map[string]*mcp.Tool) []string {
	var out []string
	for _, n := range want {
		if got[n] == nil {
			out = append(out, n)
		}
	}
	return out
}

// TestFirstListComplete starts switchboard afresh, again and again, with
// three npm reference servers and lists tools once, at once: with the
// catalogs a first run kept (DESIGN §13), the first list a client gets
// holds every tool of every server while the servers start, over stdio
// (listing right after initialize) and over /mcp (right after the listener
// is up).
func TestFirstListComplete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, want := threeNPMServers(t, dir)

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		path := writeConfig(t, t.TempDir(), cfg)
		cache := "XDG_CACHE_HOME=" + t.TempDir()
		for run := range firstListRuns + 1 {
			c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			cmd := newCmd(switchboard, "serve", "--stdio", "--config", path)
			cmd.Env = append(os.Environ(), cache)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			if run == 0 {
				// The first run, with no catalog kept: every server lists,
				// and its catalog is kept for the runs after it.
				testutil.Eventually(t, 60*time.Second, "every tool listed", func() bool { return len(missing(want, listTools(t, cs))) == 0 })
			}
			got := listTools(t, cs)
			cs.Close()
			cancel()
			if m := missing(want, got); len(m) > 0 {
				t.Errorf("run %d: the first list lacks %d of %d tools: %v", run, len(m), len(want), m)
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
		for run := range firstListRuns + 1 {
			s := startSwitchboardIn(t, t.TempDir(), dir, cfg, env)
			cs := s.client(t, nil)
			if run == 0 {
				testutil.Eventually(t, 60*time.Second, "every tool listed", func() bool { return len(missing(want, listTools(t, cs))) == 0 })
			}
			got := listTools(t, cs)
			cs.Close()
			s.stop(10 * time.Second)
			if m := missing(want, got); len(m) > 0 {
				t.Errorf("run %d: the first list lacks %d of %d tools: %v", run, len(m), len(want), m)
			}
		}
	})
}
