package secrets

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/secrets/helper"
)

// HelperName is the secrets helper's command (cmd/switchboard-secrets).
const HelperName = "switchboard-secrets"

// HelperEnv names the helper's path when set.
const HelperEnv = "SWITCHBOARD_SECRETS_HELPER"

// HelperOptions configures the secrets helper, the process that reads
// secret://aws references (package secrets/helper).
type HelperOptions struct {
	// Path is the helper's executable. If empty, HelperEnv names it, else
	// the HelperName beside the running executable is used, else the one on
	// PATH.
	Path string
	// Env is the helper's environment. If nil, it inherits the process's
	// (the AWS_* configuration chain reads it there).
	Env []string
	// Idle is how long the helper runs with no request before it is ended.
	// If zero, 30 s.
	Idle time.Duration
}

// helperDeadlineMargin is how much longer than its caller the helper may
// work on a request.
const helperDeadlineMargin = 250 * time.Millisecond

// helperProc starts the helper on the first request, sends it requests,
// and ends it when it has been idle or at close. A helper that exits fails
// the requests it had; the next request starts another.
type helperProc struct {
	opt  HelperOptions
	path func() (string, error)
	log  hclog.Logger

	mu     sync.Mutex
	run    *helperRun              // the one new requests go to; nil for none
	live   map[*helperRun]struct{} // every process not yet waited for
	nextID uint64
	closed bool
}

// helperRun is one helper process.
type helperRun struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *tailWriter
	pending map[uint64]chan helper.Response
	idle    *time.Timer
	done    chan struct{} // closed when the process has exited and been waited for
	err     error         // why it ended; set before done closes
}

func newHelperProc(opt HelperOptions, env func(string) (string, bool), log hclog.Logger) *helperProc {
	if opt.Idle <= 0 {
		opt.Idle = 30 * time.Second
	}
	return &helperProc{opt: opt, log: log, live: map[*helperRun]struct{}{}, path: func() (string, error) { return helperPath(opt.Path, env) }}
}

// FindHelper returns the path of the helper switchboard would start for a
// secret://aws reference, found as HelperOptions.Path says (with Path
// empty, in the process's environment), or an error that says where it was
// looked for.
func FindHelper() (string, error) {
	p, err := helperPath("", os.LookupEnv)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s names the secrets helper, which reads secret://aws: %w", HelperEnv, err)
	}
	return p, nil
}

// helperPath finds the helper's executable.
func helperPath(path string, env func(string) (string, bool)) (string, error) {
	if path != "" {
		return path, nil
	}
	if p, ok := env(HelperEnv); ok && p != "" {
		return p, nil
	}
	name := HelperName
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	var beside string
	if exe, err := os.Executable(); err == nil {
		if exe, err := filepath.EvalSymlinks(exe); err == nil {
			beside = filepath.Join(filepath.Dir(exe), name)
			if st, err := os.Stat(beside); err == nil && !st.IsDir() {
				return beside, nil
			}
		}
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	where := "on PATH"
	if beside != "" {
		where = "at " + beside + " or on PATH"
	}
	return "", fmt.Errorf("secret://aws is read by the %s helper, not found %s: install it beside switchboard (its images have it) or set %s to its path", HelperName, where, HelperEnv)
}

// fetch asks the helper for one secret of backend.
func (p *helperProc) fetch(ctx context.Context, backend string, ref Ref) (string, error) {
	req := helper.Request{Backend: backend, Path: ref.Path, Key: ref.Field}
	if d, ok := ctx.Deadline(); ok {
		// The helper's deadline is a backstop that ends its work; the
		// caller's context ends the wait a little before it, so a request
		// past its deadline fails with the caller's own context error.
		req.Timeout = time.Until(d).Milliseconds() + helperDeadlineMargin.Milliseconds()
	}
	ch := make(chan helper.Response, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", ErrClosed
	}
	run := p.run
	if run == nil {
		var err error
		if run, err = p.startLocked(); err != nil {
			p.mu.Unlock()
			return "", err
		}
		p.run = run
	}
	p.nextID++
	req.ID = p.nextID
	run.pending[req.ID] = ch
	run.idle.Stop()
	b, _ := json.Marshal(req)
	_, werr := run.stdin.Write(append(b, '\n'))
	p.mu.Unlock()

	var resp helper.Response
	var err error
	if werr != nil {
		// Its stdin is closed only when it has gone or is going: end it and
		// say why it went.
		run.cmd.Process.Kill()
		select {
		case <-run.done:
			err = run.err
		case <-ctx.Done():
			err = ctx.Err()
		}
	} else {
		select {
		case resp = <-ch:
		case <-run.done:
			select {
			case resp = <-ch: // answered before it exited
			default:
				err = run.err
			}
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	p.mu.Lock()
	delete(run.pending, req.ID)
	if len(run.pending) == 0 && p.run == run {
		run.idle.Reset(p.opt.Idle)
	}
	p.mu.Unlock()
	switch {
	case err != nil:
		return "", err
	case resp.NotFound:
		return "", &notFoundError{msg: resp.Error}
	case resp.Error != "":
		return "", errors.New(resp.Error)
	}
	return resp.Value, nil
}

// startLocked starts a helper process. It requires p.mu.
func (p *helperProc) startLocked() (*helperRun, error) {
	path, err := p.path()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path)
	cmd.Env = p.opt.Env
	run := &helperRun{
		cmd:     cmd,
		stderr:  &tailWriter{max: 2048},
		pending: map[uint64]chan helper.Response{},
		done:    make(chan struct{}),
	}
	cmd.Stderr = run.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", HelperName, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", HelperName, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", HelperName, path, err)
	}
	run.stdin = stdin
	run.idle = time.AfterFunc(p.opt.Idle, func() { p.idleEnd(run) })
	run.idle.Stop()
	p.live[run] = struct{}{}
	p.log.Debug("secrets helper started", "path", path, "pid", cmd.Process.Pid)
	go p.read(run, stdout)
	return run, nil
}

// read delivers the helper's responses until its stdout ends, then waits
// for it and fails what it had not answered.
func (p *helperProc) read(run *helperRun, stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 4096), helper.MaxLine)
	var bad error
	for sc.Scan() {
		var resp helper.Response
		if err := json.Unmarshal(sc.Bytes(), &resp); err != nil {
			bad = fmt.Errorf("%s: malformed response: %w", HelperName, err)
			break
		}
		p.mu.Lock()
		ch := run.pending[resp.ID]
		delete(run.pending, resp.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
	if bad == nil {
		bad = sc.Err()
	}
	if bad != nil {
		// A helper that says what it should not is ended.
		run.cmd.Process.Kill()
	}
	werr := run.cmd.Wait()
	p.mu.Lock()
	if p.run == run {
		p.run = nil
	}
	delete(p.live, run)
	run.idle.Stop()
	p.mu.Unlock()
	reason := "exited"
	switch {
	case bad != nil:
		reason = bad.Error()
	case werr != nil:
		reason = "exited: " + werr.Error()
	}
	if tail := strings.TrimSpace(run.stderr.String()); tail != "" {
		reason += ": " + tail
	}
	run.err = fmt.Errorf("%s %s", HelperName, reason)
	close(run.done)
}

// idleEnd ends run when it still has nothing to do: its stdin closes, and
// it exits once it has answered everything (nothing, here).
func (p *helperProc) idleEnd(run *helperRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != run || len(run.pending) > 0 {
		return
	}
	p.run = nil
	run.stdin.Close()
}

// close ends every helper process and waits for them, killing those not
// gone after 5 s.
func (p *helperProc) close() {
	p.mu.Lock()
	p.closed = true
	p.run = nil
	runs := make([]*helperRun, 0, len(p.live))
	for run := range p.live {
		runs = append(runs, run)
	}
	p.mu.Unlock()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for _, run := range runs {
		run.stdin.Close()
	}
	for _, run := range runs {
		select {
		case <-run.done:
		case <-deadline.C:
			for _, r := range runs {
				r.cmd.Process.Kill()
			}
			<-run.done
		}
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, b...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(b), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
