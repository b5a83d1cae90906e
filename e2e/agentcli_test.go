package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentTimeout bounds one run of an agent CLI.
const agentTimeout = 3 * time.Minute

// agent is a real agent CLI (Claude Code, Gemini CLI, Codex CLI) run
// against a fake model on loopback, in a home directory of its own.
type agent struct {
	bin   string
	model *fakeModel
	home  string
	dir   string   // working directory
	env   []string // the whole environment of each run
	races string   // GORACE log_path prefix for the switchboards it starts

	started time.Time // when the last run started
}

// newAgent prepares an agent run by bin with model, its environment built
// from scratch (nothing of the caller's, so no API key, proxy or settings
// leak in) plus extra.
func newAgent(t *testing.T, bin string, model *fakeModel, extra ...string) *agent {
	t.Helper()
	a := &agent{bin: bin, model: model, home: t.TempDir(), dir: t.TempDir()}
	a.races = filepath.Join(t.TempDir(), "race")
	path := filepath.Dir(bin) + string(os.PathListSeparator) + strings.TrimPrefix(npmEnv(t)[0], "PATH=")
	a.env = append([]string{
		"HOME=" + a.home,
		"PATH=" + path,
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
		"XDG_RUNTIME_DIR=" + filepath.Join(a.home, "run"),
		"NO_PROXY=127.0.0.1,localhost",
		// A switchboard the agent starts over stdio writes race reports
		// here, where the test reads them (its stderr is the agent's).
		"GORACE=log_path=" + a.races,
	}, extra...)
	t.Cleanup(func() {
		matches, _ := filepath.Glob(a.races + ".*")
		for _, f := range matches {
			b, _ := os.ReadFile(f)
			t.Errorf("a switchboard started by %s reported a data race:\n%s", filepath.Base(bin), b)
		}
	})
	return a
}

// run runs the agent with args to its end (at most agentTimeout), then
// ends whatever it left in its process group, and returns stdout.
func (a *agent) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.bin, args...)
	cmd.Dir, cmd.Env = a.dir, a.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	a.started = start
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stdio servers it may have left
	}
	t.Logf("%s %s: %v after %s", filepath.Base(a.bin), args[0], err, time.Since(start).Round(time.Millisecond))
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("%s: %v (ctx %v)\nstdout:\n%s\nstderr:\n%s", filepath.Base(a.bin), err, ctx.Err(), tail(stdout.String(), 4000), tail(stderr.String(), 4000))
	}
	if err != nil {
		t.Logf("%s failed:\nstdout:\n%s\nstderr:\n%s", filepath.Base(a.bin), tail(stdout.String(), 4000), tail(stderr.String(), 4000))
	}
	return stdout.String()
}

// writeJSONFile writes v as JSON to dir/name and returns the path.
func writeJSONFile(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// switchboardStdio is the MCP client config entry that starts switchboard
// over stdio with the config file at path.
func switchboardStdio(path string) map[string]any {
	return map[string]any{"type": "stdio", "command": switchboard, "args": []string{"serve", "--stdio", "--config", path}}
}

// withPrefix returns the names that start with prefix, sorted.
func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// lacking returns the names of want that are not in got.
func lacking(want, got []string) []string {
	have := map[string]bool{}
	for _, n := range got {
		have[n] = true
	}
	var out []string
	for _, n := range want {
		if !have[n] {
			out = append(out, n)
		}
	}
	return out
}
