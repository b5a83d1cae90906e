package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// cliEnv is the environment of a switchboard command in these tests: its
// own instance registry (XDG_RUNTIME_DIR) and no SWITCHBOARD_ADMIN_LISTEN
// from the caller's shell.
func cliEnv(runtimeDir string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHBOARD_ADMIN_LISTEN=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "XDG_RUNTIME_DIR="+runtimeDir), extra...)
}

// runCLI runs one switchboard command to its end and returns its exit
// code, stdout and stderr.
func runCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(switchboard, args...)
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("switchboard %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// brokenServer is a stdio server that writes its reason to stderr and exits
// before initialize, and is not restarted.
func brokenServer(name string) map[string]any {
	s := fixtureServer(name, "--exit-at-start", "1")
	s["maxRestarts"] = 0
	return s
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestStdioStatus (issue 18): `serve --stdio` opens its admin listener on a
// free loopback port and registers it, so `switchboard status --config`
// finds it; the header names the address, how it was found and the config;
// a failed server shows the end of its stderr; a config other than the one
// served is refused rather than shown. The first log line names the
// version, the config, the addresses and the server count.
func TestStdioStatus(t *testing.T) {
	dir, rt := t.TempDir(), t.TempDir()
	env := cliEnv(rt)
	cfg := writeConfig(t, dir, map[string]any{"mcpServers": map[string]any{"ok": fixtureServer("ok"), "broken": brokenServer("broken")}})
	ready := filepath.Join(dir, "ready")
	cmd := newCmd(switchboard, "serve", "--stdio", "--config", cfg, "--ready-file", ready)
	cmd.Env = env
	logs := &proc{t: t}
	cmd.Stderr = lockedWriter{logs}
	cmd.Stdout = io.Discard
	stdin, err := cmd.StdinPipe() // open until the test ends: EOF ends a stdio session
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("switchboard --stdio: %v", err)
		}
		if strings.Contains(logs.Stderr(), "WARNING: DATA RACE") || t.Failed() {
			t.Logf("switchboard stderr:\n%s", tail(logs.Stderr(), 8000))
		}
	})
	addrs := strings.Fields(waitFile(t, ready, 30*time.Second, nil))
	if len(addrs) != 2 || addrs[0] != "stdio" || !strings.HasPrefix(addrs[1], "127.0.0.1:") || addrs[1] == "127.0.0.1:8932" {
		t.Fatalf("ready file %q, want stdio and a free loopback admin port", addrs)
	}
	banner := firstLine(logs.Stderr())
	for _, want := range []string{"starting:", "version=", "config=" + cfg, "addr=stdio", "admin=" + addrs[1], "servers=2"} {
		if !strings.Contains(banner, want) {
			t.Errorf("first log line lacks %q: %s", want, banner)
		}
	}

	var out string
	testutil.Eventually(t, 20*time.Second, "status shows the failed server's stderr", func() bool {
		code, o, e := runCLI(t, env, "status", "--config", cfg)
		if code != 0 {
			t.Logf("status exit %d: %s", code, e)
			return false
		}
		out = o
		return strings.Contains(o, "broken stderr")
	})
	for _, want := range []string{
		"admin " + addrs[1] + " (registered for --config)",
		"config " + cfg + "  mcp stdio",
		"process exited before initialize",
		"broken stderr (last ",
		"exiting at start with code 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ok stderr") {
		t.Errorf("status shows the stderr of a server that is up:\n%s", out)
	}
	// The only switchboard running is found without flags, and an
	// exported SWITCHBOARD_ADMIN_LISTEN that --config overrides is named.
	if code, o, e := runCLI(t, env, "status"); code != 0 || !strings.Contains(o, "(the only switchboard running)") {
		t.Errorf("status without flags: exit %d\n%s%s", code, o, e)
	}
	if code, o, e := runCLI(t, cliEnv(rt, "SWITCHBOARD_ADMIN_LISTEN=127.0.0.1:1"), "status", "--config", cfg); code != 0 ||
		!strings.Contains(o, "note: SWITCHBOARD_ADMIN_LISTEN=127.0.0.1:1 not used") {
		t.Errorf("status with another SWITCHBOARD_ADMIN_LISTEN: exit %d\n%s%s", code, o, e)
	}
	// Asked about another config at this address: refused, not shown.
	other := filepath.Join(dir, "other.json")
	code, o, e := runCLI(t, env, "status", "--admin", addrs[1], "--config", other)
	if code == 0 || !strings.Contains(e, "serves "+cfg+", not "+other) {
		t.Errorf("status of another config: exit %d\n%s%s", code, o, e)
	}
}

// TestServeBanner: the first log line of an HTTP start names the version,
// the embedded demo config, both bound addresses and the server count.
func TestServeBanner(t *testing.T) {
	s := startSwitchboard(t, nil)
	banner := firstLine(s.Stderr())
	for _, want := range []string{"starting:", "version=", `config="embedded demo"`, "addr=" + s.addr, "admin=" + s.admin, "servers=2"} {
		if !strings.Contains(banner, want) {
			t.Errorf("first log line lacks %q: %s", want, banner)
		}
	}
}

// TestToolsCommandStartsLazyAndFailsOnDown (issue 18): `switchboard tools`
// starts lazy servers to list them, and exits 1 naming a server that did
// not come up, with what it wrote to stderr.
func TestToolsCommandStartsLazyAndFailsOnDown(t *testing.T) {
	dir, rt := t.TempDir(), t.TempDir()
	env := cliEnv(rt)
	lazy := fixtureServer("lazy")
	lazy["lazy"] = true
	good := writeConfig(t, dir, map[string]any{"mcpServers": map[string]any{"lazy": lazy}})
	code, out, errOut := runCLI(t, env, "tools", "--config", good)
	if code != 0 || !strings.Contains(out, "mcp_lazy_echo") {
		t.Errorf("tools with a lazy server: exit %d\n%s%s", code, out, errOut)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.Rename(writeConfig(t, dir, map[string]any{"mcpServers": map[string]any{"lazy": lazy, "broken": brokenServer("broken")}}), bad); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, env, "tools", "--config", bad)
	if code != 1 {
		t.Errorf("tools with a failed server: exit %d, want 1", code)
	}
	if !strings.Contains(out, "mcp_lazy_echo") {
		t.Errorf("the servers that are up are not listed:\n%s", out)
	}
	for _, want := range []string{`server "broken" is failed`, "exiting at start with code 1", "not up", "broken"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("tools stderr lacks %q:\n%s", want, errOut)
		}
	}
}
