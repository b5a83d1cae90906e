package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestReadmeCommands runs every command of README.md's shell blocks, in
// the README's order, the way a reader in a checkout would, so that a
// README edit that breaks a command fails here. Files the README shows
// (servers.json) are written first. A serve command keeps running, as in
// a terminal of its own, until the next serve command, and is checked
// while it runs: it answers MCP on its port (and the paths its comment
// names), lists its servers' tools and hides the ones its config denies;
// it is stopped by PID. The other commands run to their end and are
// checked by what they are for.
//
// What differs from a reader's machine, and why:
//   - SWITCHBOARD_LISTEN and SWITCHBOARD_ADMIN_LISTEN are 127.0.0.1:0 for
//     serve commands, so nothing collides with the README's default ports;
//     a command that names http://127.0.0.1:8931 gets the address a serve
//     command bound instead (that of the last HTTP one, started again if
//     a stdio one runs now).
//   - The npm packages come from the test tool cache (.ci/setup), linked
//     as the reader's node_modules, so npx runs them offline.
//   - Remote servers (a URL in the config) need the network: their
//     secret://env/ references get a dummy value, HTTPS_PROXY points at a
//     closed loopback port, and a command may report them down.
//   - `bash .ci/run` is CI itself, which runs this test: only its syntax is
//     checked.
func TestReadmeCommands(t *testing.T) {
	r := newReadmeRunner(t)
	ran := 0
	for _, b := range readmeBlocks(t) {
		if f, ok := b.file(t); ok {
			f.writeTo(t, r.work)
			r.files[f.name] = f
			for _, m := range secretEnvRE.FindAllStringSubmatch(string(f.data), -1) {
				r.env = append(r.env, m[1]+"=readme-test-value")
			}
			continue
		}
		if !b.isShell() {
			continue
		}
		for _, c := range b.commands(t) {
			if c.argv == nil {
				continue
			}
			t.Logf("%s", c)
			r.run(c)
			ran++
		}
	}
	r.stopServing()
	if ran == 0 {
		t.Fatal("README.md shows no shell command")
	}
}

// readmeRunner runs README commands one after the other.
type readmeRunner struct {
	t       *testing.T
	root    string // the checkout
	work    string // the reader's directory: the README's files, node_modules
	runtime string // XDG_RUNTIME_DIR: the instance registry
	env     []string
	files   map[string]readmeFile
	seen    map[int]bool // PIDs of registry records already taken

	serving  *readmeServe
	lastHTTP *readmeCommand
}

func newReadmeRunner(t *testing.T) *readmeRunner {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	r := &readmeRunner{t: t, root: root, work: t.TempDir(), runtime: t.TempDir(), files: map[string]readmeFile{}, seen: map[int]bool{}}
	npm := npmDir(t)
	if err := os.Symlink(filepath.Join(npm, "node_modules"), filepath.Join(r.work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	pathEnv := binDir + string(os.PathListSeparator) + strings.TrimPrefix(npmEnv(t)[0], "PATH=")
	for _, kv := range cliEnv(r.runtime) {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "SWITCHBOARD_") {
			r.env = append(r.env, kv)
		}
	}
	r.env = append(r.env, "PATH="+pathEnv, "HTTPS_PROXY=http://127.0.0.1:1", "https_proxy=http://127.0.0.1:1", "NO_PROXY=127.0.0.1,localhost")
	t.Cleanup(r.stopServing)
	return r
}

// run runs one command and checks it.
func (r *readmeRunner) run(c *readmeCommand) {
	t := r.t
	switch {
	case len(c.argv) == 2 && c.argv[0] == "bash" && c.argv[1] == ".ci/run":
		out, err := exec.Command("bash", "-n", filepath.Join(r.root, ".ci", "run")).CombinedOutput()
		if err != nil {
			t.Errorf("%s: bash -n: %v\n%s", c, err, out)
		}
		t.Logf("%s: CI itself (it runs this test): syntax checked only", c)
	case len(c.argv) >= 3 && c.argv[0] == "go" && c.argv[1] == "run" && c.argv[2] == "./cmd/switchboard":
		r.switchboard(c, c.argv[:3], c.argv[3:], r.root)
	case c.argv[0] == "switchboard":
		r.switchboard(c, []string{switchboard}, c.argv[1:], r.work)
	case len(c.argv) >= 2 && c.argv[0] == "npx" && c.argv[1] == "@modelcontextprotocol/inspector":
		r.inspector(c)
	default:
		t.Errorf("%s: this test does not know how to run and check this command; teach readme_run_test.go", c)
	}
}

// subcommand is a switchboard command line's command (serve when none).
func subcommand(args []string) string {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "serve"
	}
	return args[0]
}

// flagValue returns the value of --name in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || a == "--"+name+"=true" {
			return true
		}
	}
	return false
}

// switchboard runs a switchboard command line: prog is how it is started
// (the binary, or go run), args what follows.
func (r *readmeRunner) switchboard(c *readmeCommand, prog, args []string, dir string) {
	t := r.t
	sub := subcommand(args)
	if sub == "serve" {
		r.serve(c, prog, args, dir)
		return
	}
	code, stdout, stderr := r.exec(c, dir, nil, append(prog[1:], args...), prog[0])
	fail := func(format string, a ...any) {
		t.Errorf("%s: %s\nexit %d\nstdout:\n%s\nstderr:\n%s", c, fmt.Sprintf(format, a...), code, tail(stdout, 3000), tail(stderr, 3000))
	}
	switch sub {
	case "validate":
		if code != 0 || !strings.Contains(stdout, ": ok") {
			fail("want exit 0 and ok")
		}
	case "tools":
		if f := strings.Fields(firstLine(stdout)); strings.Join(f, " ") != "TOOL SERVER ORIGINAL DESCRIPTION" {
			fail("no tool table")
		}
		if code != 0 {
			// Only servers that need the network may be down.
			file := r.files[flagValue(args, "config")]
			down := regexp.MustCompile(`server "([^"]+)" is`).FindAllStringSubmatch(stderr, -1)
			for _, d := range down {
				if s := file.servers()[d[1]]; s == nil || !remote(s) {
					fail("server %q did not come up", d[1])
				}
			}
			if code != 1 || len(down) == 0 {
				fail("want exit 0, or 1 for remote servers down offline")
			}
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(stdout, "\n") {
			lines[strings.TrimRight(l, " ")] = true
		}
		for _, want := range c.output {
			if want = strings.TrimRight(want, " "); want != "…" && want != "" && !lines[want] {
				fail("the README shows the line %q, the command does not print it", want)
			}
		}
	case "status":
		if r.serving == nil {
			fail("no serve command runs before it")
			return
		}
		if code != 0 || !strings.Contains(stdout, fmt.Sprintf("pid %d ", r.serving.rec.PID)) {
			fail("want exit 0 and the running switchboard (pid %d)", r.serving.rec.PID)
		}
		if cfg := flagValue(args, "config"); cfg != "" && !strings.Contains(stdout, filepath.Join(r.work, cfg)) {
			fail("the report does not name %s", cfg)
		}
	case "version":
		if code != 0 || !strings.HasPrefix(stdout, "switchboard ") {
			fail("want exit 0 and a version")
		}
	default:
		fail("no check for switchboard %s; teach readme_run_test.go", sub)
	}
}

// exec runs a command to its end (at most 5 minutes) and returns its exit
// code and output.
func (r *readmeRunner) exec(c *readmeCommand, dir string, extraEnv []string, args []string, name string) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, append(append([]string(nil), r.env...), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) || ctx.Err() != nil {
		r.t.Fatalf("%s: %v (%v)\n%s", c, err, ctx.Err(), tail(stderr.String(), 3000))
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// inspector runs an MCP Inspector CLI command: over HTTP against the
// README's serve command, over stdio with the server command it names.
func (r *readmeRunner) inspector(c *readmeCommand) {
	t := r.t
	args := append([]string(nil), c.argv[1:]...)
	for i, a := range args {
		if strings.Contains(a, "127.0.0.1:8931") {
			r.ensureHTTP(c)
			args[i] = strings.ReplaceAll(a, "127.0.0.1:8931", r.serving.rec.Listen)
		}
	}
	home := t.TempDir()
	code, stdout, stderr := r.exec(c, r.work, []string{"HOME=" + home, "MCP_CATALOG_PATH=" + filepath.Join(home, "catalog.json")}, args, "npx")
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || len(res.Tools) == 0 {
		t.Errorf("%s: want exit 0 and a tools/list result with tools; exit %d (%v)\nstdout:\n%s\nstderr:\n%s", c, code, err, tail(stdout, 3000), tail(stderr, 3000))
	}
}

// ensureHTTP makes the running serve command an HTTP one, starting the
// README's last HTTP serve command again if need be.
func (r *readmeRunner) ensureHTTP(c *readmeCommand) {
	if r.serving != nil && r.serving.rec.Listen != "stdio" {
		return
	}
	if r.lastHTTP == nil {
		r.t.Fatalf("%s: talks to a serve command over HTTP, and the README runs none before it", c)
	}
	r.t.Logf("%s: starting %s again", c, r.lastHTTP)
	r.run(r.lastHTTP)
}

// readmeServe is a serve command that is running.
type readmeServe struct {
	cmd  *readmeCommand
	proc *proc              // an HTTP serve
	cs   *mcp.ClientSession // a stdio serve: the session on its stdin and stdout
	rec  registryRecord
}

// registryRecord is what a running switchboard registers about itself.
type registryRecord struct {
	PID    int    `json:"pid"`
	Config string `json:"config"`
	Listen string `json:"listen"`
	Admin  string `json:"admin"`
}

// newRecord waits for a registry record of a process not seen before.
func (r *readmeRunner) newRecord(c *readmeCommand, exited <-chan struct{}, stderr func() string) registryRecord {
	deadline := time.Now().Add(5 * time.Minute) // go run builds first
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(r.runtime, "switchboard", "*.json"))
		for _, f := range files {
			var rec registryRecord
			b, _ := os.ReadFile(f)
			if json.Unmarshal(b, &rec) == nil && rec.PID != 0 && !r.seen[rec.PID] {
				r.seen[rec.PID] = true
				return rec
			}
		}
		select {
		case <-exited:
			r.t.Fatalf("%s: exited before serving\n%s", c, tail(stderr(), 4000))
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.t.Fatalf("%s: not serving after 5 minutes\n%s", c, tail(stderr(), 4000))
	return registryRecord{}
}

// serve starts a serve command, stopping the one running, and checks it.
func (r *readmeRunner) serve(c *readmeCommand, prog, args []string, dir string) {
	t := r.t
	r.stopServing()
	s := &readmeServe{cmd: c}
	env := []string{"SWITCHBOARD_LISTEN=127.0.0.1:0", "SWITCHBOARD_ADMIN_LISTEN=127.0.0.1:0"}
	if hasFlag(args, "stdio") {
		cmd := newCmd(prog[0], append(prog[1:], args...)...)
		cmd.Dir, cmd.Env = dir, append(append([]string(nil), r.env...), env...)
		logs := &proc{t: t}
		cmd.Stderr = lockedWriter{logs}
		client := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		cancel()
		if err != nil {
			t.Fatalf("%s: connect over stdio: %v\n%s", c, err, tail(logs.Stderr(), 4000))
		}
		s.cs = cs
		s.rec = r.newRecord(c, nil, logs.Stderr)
		if s.rec.PID != cmd.Process.Pid {
			t.Errorf("%s: the registry names pid %d, the process is %d", c, s.rec.PID, cmd.Process.Pid)
		}
	} else {
		s.proc = start(t, dir, append(append([]string(nil), r.env...), env...), prog[0], append(prog[1:], args...)...)
		s.rec = r.newRecord(c, s.proc.done, s.proc.Stderr)
		s.cs = connectHTTP(t, "http://"+s.rec.Listen+"/mcp", nil)
		r.lastHTTP = c
	}
	r.serving = s
	r.checkServing(c, args)
}

// checkServing checks the running serve command: every server it should
// start lists tools (those needing the network aside), denied tools are
// hidden, and the paths its comment names answer.
func (r *readmeRunner) checkServing(c *readmeCommand, args []string) {
	t := r.t
	s := r.serving
	var want []string // tool name prefixes, one per server
	var deny []string
	if cfg := flagValue(args, "config"); cfg != "" {
		f, ok := r.files[cfg]
		if !ok {
			t.Fatalf("%s: the README shows no %s before it", c, cfg)
		}
		for name, srv := range f.servers() {
			if !remote(srv) {
				want = append(want, "mcp_"+toolPrefix(name, srv)+"_")
			}
		}
		if tools, ok := f.cfg["tools"].(map[string]any); ok {
			for _, g := range tools["deny"].([]any) {
				deny = append(deny, g.(string))
			}
		}
	} else {
		// The embedded demo config: README names its two servers.
		want = []string{"mcp_clock_", "mcp_notes_"}
	}
	var tools map[string]*mcp.Tool
	testutil.Eventually(t, 60*time.Second, c.String()+": tools of every local server", func() bool {
		tools = listTools(t, s.cs)
		for _, p := range want {
			found := false
			for name := range tools {
				found = found || strings.HasPrefix(name, p)
			}
			if !found {
				return false
			}
		}
		return true
	})
	for name := range tools {
		for _, g := range deny {
			if ok, _ := path.Match(g, name); ok {
				t.Errorf("%s: %s is listed, but the config denies %s", c, name, g)
			}
		}
	}
	if s.rec.Listen == "stdio" {
		return
	}
	for _, p := range regexp.MustCompile(`(?:^|[\s/])(/(?:mcp|sse))\b`).FindAllStringSubmatch(c.comment, -1) {
		if p[1] == "/sse" {
			checkSSE(t, c, "http://"+s.rec.Listen+"/sse")
		}
	}
	resp, err := http.Get("http://" + s.rec.Admin + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("%s: /healthz on %s: %v %v", c, s.rec.Admin, err, resp)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

// checkSSE checks that url opens a legacy SSE stream whose first event
// names the endpoint to post to.
func checkSSE(t *testing.T, c *readmeCommand, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s: GET %s: %v", c, url, err)
		return
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(buf[:n]), "endpoint") {
		t.Errorf("%s: GET %s: %s %q", c, url, resp.Status, buf[:n])
	}
}

// stopServing stops the running serve command, by its PID.
func (r *readmeRunner) stopServing() {
	s := r.serving
	if s == nil {
		return
	}
	r.serving = nil
	if s.proc == nil { // stdio: end of input ends it
		if err := s.cs.Close(); err != nil {
			r.t.Logf("%s: close: %v", s.cmd, err)
		}
		if pidAlive(s.rec.PID) {
			r.t.Errorf("%s: pid %d still runs after its stdin closed", s.cmd, s.rec.PID)
			_ = syscall.Kill(s.rec.PID, syscall.SIGKILL)
		}
		return
	}
	_ = s.cs.Close()
	// The registered PID is switchboard itself, under go run a child of
	// the process the test started.
	if err := syscall.Kill(s.rec.PID, syscall.SIGTERM); err != nil {
		r.t.Errorf("%s: SIGTERM to pid %d: %v", s.cmd, s.rec.PID, err)
	}
	select {
	case <-s.proc.done:
	case <-time.After(30 * time.Second):
		r.t.Errorf("%s: still running 30s after SIGTERM to pid %d", s.cmd, s.rec.PID)
		s.proc.stop(time.Second)
	}
	testutil.Eventually(r.t, 10*time.Second, "pid "+strconv.Itoa(s.rec.PID)+" to exit", func() bool { return !pidAlive(s.rec.PID) })
}
