package upstream

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
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

// stopTimings are the stop sequence's pauses: close stdin, wait grace, SIGTERM
// to the process group, wait term, SIGKILL to the group.
var stopTimings = struct{ grace, term time.Duration }{grace: time.Second, term: 5 * time.Second}

// stdioConn is a running child: the transport plus what is needed to stop its
// whole process group.
type stdioConn struct {
	cmd *exec.Cmd
}

// stdioTransport prepares a child process for mcp.CommandTransport. The
// command is not bound to a context: exec.CommandContext would kill the child
// when the connect deadline passes.
func stdioTransport(_ context.Context, spec Spec, env map[string]string, args []string, stderr *lineWriter) (*mcp.CommandTransport, *stdioConn, error) {
	path, err := exec.LookPath(spec.Command)
	if err != nil {
		return nil, nil, fmt.Errorf("command %q: %w", spec.Command, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = childEnv(os.LookupEnv, env)
	cmd.Dir = spec.Dir
	cmd.Stderr = stderr
	// A grandchild that keeps stderr open must not block Wait forever.
	cmd.WaitDelay = 2 * time.Second
	setProcAttr(cmd)
	t := &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimings.grace + stopTimings.term + time.Second}
	return t, &stdioConn{cmd: cmd}, nil
}

// pid returns the child's PID once started, else 0.
func (c *stdioConn) pid() int {
	if c == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// escalate runs beside the SDK's own close (which closes stdin and waits):
// after the grace period it sends SIGTERM to the whole process group, then
// SIGKILL. It returns when done is closed or the group was killed.
func (c *stdioConn) escalate(done <-chan struct{}) {
	pid := c.pid()
	if pid == 0 {
		return
	}
	select {
	case <-done:
		return
	case <-time.After(stopTimings.grace):
	}
	terminateGroup(pid)
	select {
	case <-done:
		return
	case <-time.After(stopTimings.term):
	}
	killGroup(pid)
}

// reapGroup kills whatever is left of the child's process group (npx and
// uvx wrappers leave grandchildren behind). Safe to call more than once.
func (c *stdioConn) reapGroup() {
	if pid := c.pid(); pid != 0 {
		killGroup(pid)
	}
}
