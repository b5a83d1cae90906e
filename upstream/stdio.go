package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// baseEnv lists the variables a child inherits from switchboard. Everything
// else, including VAULT_TOKEN and cloud credentials, stays behind: a nil
// cmd.Env would hand the child our whole environment.
var baseEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
	"TMPDIR", "TZ", "TERM",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
	"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
	// Windows needs these to start most programs.
	"SystemRoot", "SYSTEMROOT", "windir", "COMSPEC", "PATHEXT", "APPDATA", "LOCALAPPDATA",
	"USERPROFILE", "ProgramData", "ProgramFiles", "TEMP", "TMP",
}

// childEnv builds the explicit environment of a child: the allow-listed
// variables of our own environment, then the server's resolved env (which
// wins). The result is never nil.
func childEnv(lookup func(string) (string, bool), extra map[string]string) []string {
	env := make([]string, 0, len(baseEnv)+len(extra))
	for _, k := range baseEnv {
		if _, override := extra[k]; override {
			continue
		}
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// stopTimings are the stop sequence's pauses: close stdin, wait grace (the
// MCP spec's "wait for the server to exit"), SIGTERM to the process group,
// wait term, SIGKILL to the group. Tests shorten them through export_test.go.
var stopTimings = struct{ grace, term time.Duration }{grace: time.Second, term: 5 * time.Second}

// stdioConn is a running child: what is needed to stop its whole process
// group. The PID is recorded by the goroutine that starts the process, so
// the stop sequence can read it from any goroutine.
type stdioConn struct {
	cmd  *exec.Cmd
	pidv atomic.Int64
	// shim is set when cmd is the shim (shim_linux.go) and pidv the
	// server it started.
	shim bool
}

// childTransport starts a child and speaks newline-delimited JSON-RPC on
// its stdin and stdout through a lineConn.
type childTransport struct {
	cmd   *exec.Cmd
	conn  *stdioConn
	noise func(line []byte, err error)
	// terminate is how long Close waits for the child after closing its
	// stdin before it sends SIGTERM, and again before SIGKILL. escalate
	// reaches the whole process group earlier.
	terminate time.Duration
}

func (t *childTransport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if t.conn.shim {
		pid, err := startShim(t.cmd)
		if err != nil {
			return nil, startError(err)
		}
		t.conn.pidv.Store(int64(pid))
		return newLineConn(stdout, stdin, t.wait, t.noise), nil
	}
	if err := t.cmd.Start(); err != nil {
		return nil, startError(err)
	}
	t.conn.pidv.Store(int64(t.cmd.Process.Pid))
	return newLineConn(stdout, stdin, t.wait, t.noise), nil
}

// signal sends sig to the server: the direct child, or the process the shim
// started.
func (t *childTransport) signal(sig syscall.Signal) error {
	if t.conn.shim {
		return signalPID(t.conn.pid(), sig)
	}
	return t.cmd.Process.Signal(sig)
}

// wait runs once stdin is closed: the MCP spec's stdio shutdown (wait for
// the server to exit, then SIGTERM, then SIGKILL) for the direct child, and
// the one Wait that reaps it.
func (t *childTransport) wait() error {
	res := make(chan error, 1)
	go func() { res <- t.cmd.Wait() }()
	timer := time.NewTimer(t.terminate)
	defer timer.Stop()
	waitFor := func() (error, bool) {
		timer.Reset(t.terminate)
		select {
		case err := <-res:
			return err, true
		case <-timer.C:
			return nil, false
		}
	}
	if err, ok := waitFor(); ok {
		return err
	}
	if t.signal(syscall.SIGTERM) == nil {
		if err, ok := waitFor(); ok {
			return err
		}
	}
	if err := t.signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if err, ok := waitFor(); ok {
		return err
	}
	if t.conn.shim {
		// The server is gone but its shim is not.
		_ = t.cmd.Process.Kill()
		if err, ok := waitFor(); ok {
			return err
		}
	}
	return errors.New("child did not exit after SIGKILL")
}

// stdioTransport prepares a child process. The command is not bound to a
// context: exec.CommandContext would kill the child when the connect
// deadline passes. Lines on stdout that are not JSON-RPC go to noise.
func stdioTransport(spec Spec, env map[string]string, args []string, stderr *lineWriter, noise func([]byte, error)) (mcp.Transport, *stdioConn, error) {
	path, err := exec.LookPath(spec.Command)
	if err != nil {
		return nil, nil, startError(fmt.Errorf("command %q: %w", spec.Command, err))
	}
	var cmd *exec.Cmd
	if shimOn {
		cmd = shimCommand(path, args)
	} else {
		cmd = exec.Command(path, args...)
		setProcAttr(cmd)
	}
	cmd.Env = childEnv(os.LookupEnv, env)
	cmd.Dir = spec.Dir
	cmd.Stderr = stderr
	// A grandchild that keeps stderr open must not block Wait forever.
	cmd.WaitDelay = 2 * time.Second
	c := &stdioConn{cmd: cmd, shim: shimOn}
	t := &childTransport{cmd: cmd, conn: c, noise: noise, terminate: stopTimings.grace + stopTimings.term + time.Second}
	return t, c, nil
}

// pid returns the child's PID once started, else 0.
func (c *stdioConn) pid() int {
	if c == nil {
		return 0
	}
	return int(c.pidv.Load())
}

// escalate runs beside the connection's close (which closes stdin and waits):
// after the grace period it sends SIGTERM to the whole process group, then
// SIGKILL. It returns when done is closed or the group was killed.
func (c *stdioConn) escalate(done <-chan struct{}) {
	grace := time.NewTimer(stopTimings.grace)
	defer grace.Stop()
	select {
	case <-done:
		return
	case <-grace.C:
	}
	pid := c.pid()
	if pid == 0 {
		return
	}
	terminateGroup(pid)
	term := time.NewTimer(stopTimings.term)
	defer term.Stop()
	select {
	case <-done:
		return
	case <-term.C:
	}
	killGroup(pid)
}

// guard stops the child if ctx ends while the session is being set up. A
// failed initialize makes the SDK close the session and wait for the
// process; a child that ignores stdin EOF would stretch that to
// the transport's terminate wait. The returned release must be called once the setup
// returned; it waits for the guard to finish.
func (c *stdioConn) guard(ctx context.Context) (release func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
			c.escalate(done)
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// reapGroup kills whatever is left of the child's process group (npx and
// uvx wrappers leave grandchildren behind) and reaps those of them that are
// our own children, which happens when switchboard is PID 1 of a container.
// Safe to call more than once.
func (c *stdioConn) reapGroup() {
	if pid := c.pid(); pid != 0 {
		killGroup(pid)
		reapGroupChildren(pid)
	}
}
