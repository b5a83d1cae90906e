package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Paths of the binaries TestMain builds.
var (
	binDir      string
	switchboard string
	fixture     string
	fakecloud   string
	conffix     string
	hostile     string // the scripted malicious server, see ./hostile
)

// full is set by .ci/run: tests that need heavy external components fail
// instead of skipping when those are missing.
var full = os.Getenv("SWITCHBOARD_FULL") == "1"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		// The suite takes minutes, more than go test's default timeout
		// once .ci/setup installed what it uses: -short is the unit tests.
		fmt.Println("e2e: skipped under -short; go test -timeout 40m ./e2e/ runs it")
		return 0
	}
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Processes not started through startCmd keep their catalog caches
	// here, not in the user's cache directory.
	if err := os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	switchboard = filepath.Join(dir, "switchboard")
	fixture = filepath.Join(dir, "fixture")
	fakecloud = filepath.Join(dir, "fakecloud")
	conffix = filepath.Join(dir, "conformance-fixture")
	hostile = filepath.Join(dir, "hostile")
	builds := [][2]string{
		{switchboard, "../cmd/switchboard"},
		// The secrets helper goes beside switchboard, where it looks first.
		{filepath.Join(dir, "switchboard-secrets"), "../cmd/switchboard-secrets"},
		{fixture, "./fixture"},
		{conffix, "./conformance"},
		{hostile, "./hostile"},
	}
	if _, err := os.Stat("../secrets/internal/fakecloud/cmd/fakecloud"); err == nil {
		builds = append(builds, [2]string{fakecloud, "../secrets/internal/fakecloud/cmd/fakecloud"})
	}
	for _, b := range builds {
		args := []string{"build", "-o", b[0]}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, b[1])...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", b[1], err)
			return 1
		}
	}
	return m.Run()
}

// proc is a process a test started; it is stopped by PID at cleanup.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	stdout bytes.Buffer // only with startOut; read after exit
	done   chan struct{}
	err    error
}

type lockedWriter struct{ p *proc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.stderr.Write(b)
}

// Stderr returns everything the process wrote to stderr so far.
func (p *proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// start runs a command with its stderr captured, and stops it at cleanup.
func start(t *testing.T, dir string, env []string, name string, args ...string) *proc {
	t.Helper()
	return startCmd(t, dir, env, false, name, args...)
}

// startOut is start that also captures stdout.
func startOut(t *testing.T, dir string, name string, args ...string) *proc {
	t.Helper()
	return startCmd(t, dir, nil, true, name, args...)
}

// newCmd is exec.Command with the child in its own process group.
func newCmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func startCmd(t *testing.T, dir string, env []string, captureOut bool, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, done: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Dir = dir
	// Each process keeps its catalog cache to itself unless env names one:
	// a test that starts a server another test started would otherwise
	// be answered from that test's run.
	p.cmd.Env = append(append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	p.cmd.Stderr = lockedWriter{p}
	if captureOut {
		p.cmd.Stdout = &p.stdout
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(5 * time.Second)
		if strings.Contains(p.Stderr(), "WARNING: DATA RACE") {
			t.Errorf("%s reported a data race:\n%s", filepath.Base(name), p.Stderr())
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(name), tail(p.Stderr(), 8000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// stop sends SIGTERM and waits, then SIGKILLs the process group.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("process did not exit within %s", d)
	}
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// sb is a running switchboard.
type sb struct {
	*proc
	addr, admin string
	dir         string
	config      string
}

// writeConfig writes a config file into dir.
func writeConfig(t *testing.T, dir string, cfg any) string {
	t.Helper()
	var b []byte
	switch c := cfg.(type) {
	case string:
		b = []byte(c)
	default:
		var err error
		b, err = json.MarshalIndent(c, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startSwitchboard runs `switchboard serve` with cfg (nil: the embedded
// default) on loopback port 0 and waits until it listens.
func startSwitchboard(t *testing.T, cfg any, extraArgs ...string) *sb {
	t.Helper()
	dir := t.TempDir()
	return startSwitchboardIn(t, dir, dir, cfg, nil, extraArgs...)
}

func startSwitchboardIn(t *testing.T, dir, workDir string, cfg any, env []string, extraArgs ...string) *sb {
	t.Helper()
	ready := filepath.Join(dir, "ready")
	args := []string{"serve", "--admin-listen", "127.0.0.1:0", "--ready-file", ready}
	// A config that sets its own listen address or log level keeps it (a
	// flag would win).
	m, _ := cfg.(map[string]any)
	if m["listen"] == nil {
		args = append(args, "--listen", "127.0.0.1:0")
	}
	if m["logLevel"] == nil {
		args = append(args, "--log-level", "debug")
	}
	s := &sb{dir: dir}
	if cfg != nil {
		s.config = writeConfig(t, dir, cfg)
		args = append(args, "--config", s.config)
	}
	args = append(args, extraArgs...)
	s.proc = start(t, workDir, env, switchboard, args...)
	lines := waitFile(t, ready, 30*time.Second, s.proc)
	parts := strings.Fields(lines)
	if len(parts) != 2 {
		t.Fatalf("ready file holds %q", lines)
	}
	s.addr, s.admin = parts[0], parts[1]
	return s
}

// waitFile polls for a file to appear and returns its content.
func waitFile(t *testing.T, path string, d time.Duration, p *proc) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		if p != nil {
			select {
			case <-p.done:
				t.Fatalf("process exited before writing %s: %v\n%s", path, p.err, p.Stderr())
			default:
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within %s", path, d)
	return ""
}

// client connects a go-sdk client to the switchboard's /mcp.
func (s *sb) client(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectHTTP(t, "http://"+s.addr+"/mcp", opts)
}

func connectHTTP(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// listTools lists every tool through all pages.
func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		out[tool.Name] = tool
	}
	return out
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := callTool(t, cs, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// textOf joins the text contents of a result.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// status fetches /status from the admin listener.
func (s *sb) status(t *testing.T) map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + s.admin + "/status")
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("status: %v", err)
	}
	return out
}

// serverStatus returns one server's entry of /status.
func (s *sb) serverStatus(t *testing.T, name string) map[string]any {
	t.Helper()
	servers, _ := s.status(t)["servers"].([]any)
	for _, e := range servers {
		m := e.(map[string]any)
		if m["name"] == name {
			return m
		}
	}
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startFixtureHTTP runs the fixture as an HTTP or SSE server and returns its URL.
func startFixtureHTTP(t *testing.T, transport string, args ...string) (string, *proc) {
	t.Helper()
	dir := t.TempDir()
	ready := filepath.Join(dir, "url")
	p := start(t, dir, nil, fixture, append([]string{"--transport", transport, "--listen", "127.0.0.1:0", "--ready-file", ready}, args...)...)
	return strings.TrimSpace(waitFile(t, ready, 20*time.Second, p)), p
}

// npmBin locates an npm-installed executable in the test tool cache.
func npmBin(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range npmDirs() {
		p := filepath.Join(dir, "node_modules", ".bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if full {
		t.Fatalf("%s is not installed; run .ci/setup first", name)
	}
	t.Skipf("%s is not installed (run .ci/setup, or set SWITCHBOARD_FULL=1 to make this a failure)", name)
	return ""
}

func npmDirs() []string {
	var dirs []string
	if d := os.Getenv("SWITCHBOARD_NPM"); d != "" {
		dirs = append(dirs, d)
	}
	return append(dirs, filepath.Join(cacheDir(), "npm"))
}

// cacheDir is where .ci/setup caches the heavy test components.
func cacheDir() string {
	if cache := os.Getenv("SWITCHBOARD_CACHE"); cache != "" {
		return cache
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "switchboard")
}

// cachedTool is the path of a component .ci/setup put under the cache (rel
// inside it), named what for messages. Without it the test is skipped, or
// fails under SWITCHBOARD_FULL.
func cachedTool(t *testing.T, what, rel string) string {
	t.Helper()
	p := filepath.Join(cacheDir(), rel)
	if _, err := os.Stat(p); err != nil {
		if full {
			t.Fatalf("%s is not installed (%s); run .ci/setup", what, p)
		}
		t.Skipf("%s is not installed; run .ci/setup (or set SWITCHBOARD_FULL=1 to make this a failure)", what)
	}
	return p
}

// npmDir is the directory whose node_modules holds the npm test servers.
func npmDir(t *testing.T) string {
	t.Helper()
	bin := npmBin(t, "mcp-server-everything")
	return filepath.Dir(filepath.Dir(filepath.Dir(bin)))
}

// node22 returns the Node 22 binary installed through npm.
func node22(t *testing.T) string {
	t.Helper()
	return npmBin(t, "node")
}

func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}

// pidAlive reports whether a process exists and is not a zombie.
func pidAlive(pid int) bool {
	if runtime.GOOS != "linux" {
		return syscall.Kill(pid, 0) == nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Field 3 is the state; Z is a zombie.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// listenLoopback listens on a loopback port chosen by the kernel.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func dialLoopback(port int) (net.Conn, error) {
	return net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
}
