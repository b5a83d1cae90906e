package e2e

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioRootsReachSharedServer: over `serve --stdio` the one client's
// roots reach a shared server as if it were connected directly. The npm
// filesystem server, started without directories, takes its allowed
// directories from the client's roots: list_allowed_directories names the
// root the go-sdk client declared, then the one it adds (roots/list_changed
// relayed), and no longer the one it removes. A 2026-07-28 server (the
// fixture) that asks for roots in a call gets them as well.
func TestStdioRootsReachSharedServer(t *testing.T) {
	dir := t.TempDir()
	env := npmEnv(t)
	var roots []string
	for _, name := range []string{"first", "second"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, real)
	}
	fileURI := func(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }
	cfg := writeConfig(t, dir, map[string]any{"mcpServers": map[string]any{
		"files": map[string]any{
			"command": npmBin(t, "mcp-server-filesystem"),
			"env":     map[string]string{"PATH": env[0][len("PATH="):]},
		},
		"fx": map[string]any{"command": fixture, "args": []string{"--name", "fx"}, "protocol": "2026-07-28"},
	}})

	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: fileURI(roots[0]), Name: "first"})
	cmd := newCmd(switchboard, "serve", "--stdio", "--config", cfg)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	var last string
	allowed := func() string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_files_list_allowed_directories", Arguments: map[string]any{}})
		if err != nil {
			last = err.Error()
		} else {
			last = textOf(res)
		}
		return last
	}
	wait := func(what string, ok func(string) bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(allowed()); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: list_allowed_directories still says:\n%s", what, last)
			}
		}
	}
	wait("the client's root", func(s string) bool { return strings.Contains(s, roots[0]) })

	// A 2026-07-28 server asks inside a call (an input request), and is
	// told the client's roots too.
	if got := textOf(mustCall(t, cs, "mcp_fx_roots", map[string]any{})); !strings.Contains(got, fileURI(roots[0])) {
		t.Errorf("a 2026-07-28 server's roots input request got:\n%s", got)
	}

	c.AddRoots(&mcp.Root{URI: fileURI(roots[1]), Name: "second"})
	wait("an added root", func(s string) bool { return strings.Contains(s, roots[0]) && strings.Contains(s, roots[1]) })

	c.RemoveRoots(fileURI(roots[0]))
	wait("a removed root", func(s string) bool { return !strings.Contains(s, roots[0]) && strings.Contains(s, roots[1]) })
}
