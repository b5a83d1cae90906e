package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// proc is a process the benchmark started. Every proc is registered and
// stopped by PID (SIGTERM, then SIGKILL) when the benchmark ends, whether it
// ends normally, on an error or on Ctrl-C.
type proc struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
	output  *tailBuffer
}

// tailBuffer keeps the last max bytes written to it: enough of a child's
// stderr to explain a failure, without growing during a long run.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// registry holds everything to undo at exit: session closers first (they
// stop the stdio children the SDK started), then processes.
var registry struct {
	mu      sync.Mutex
	procs   []*proc
	closers []func()
}

// startProc runs a command in its own process group, with stdout and stderr
// captured into a bounded buffer, and registers it for cleanup.
func startProc(env []string, path string, args ...string) (*proc, error) {
	p := &proc{
		name:   filepath.Base(path),
		done:   make(chan struct{}),
		output: &tailBuffer{max: 16 << 10},
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	p.cmd.SysProcAttr = childAttr()
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	registry.mu.Lock()
	registry.procs = append(registry.procs, p)
	registry.mu.Unlock()
	return p, nil
}

// childAttr puts a child in its own process group (so a terminal's Ctrl-C
// reaches only the benchmark, which then stops the child in order) and asks
// the kernel to kill it if the benchmark dies without doing so.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then sends SIGKILL. Safe to call
// more than once.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(p.pid(), syscall.SIGKILL)
	<-p.done
}

// onCleanup registers f to run at exit, before processes are stopped.
func onCleanup(f func()) {
	registry.mu.Lock()
	registry.closers = append(registry.closers, f)
	registry.mu.Unlock()
}

// cleanup runs the registered closers, then stops every process that is
// still running. Each step is bounded, so cleanup always finishes.
func cleanup() {
	registry.mu.Lock()
	closers, procs := registry.closers, registry.procs
	registry.closers, registry.procs = nil, nil
	registry.mu.Unlock()

	var wg sync.WaitGroup
	for _, f := range closers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	wg.Wait()
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop(10 * time.Second)
		}()
	}
	wg.Wait()
}
