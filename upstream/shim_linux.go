//go:build linux

package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// The shim exists because SIGKILL cannot be caught: when switchboard is
// killed that way, Pdeathsig kills its direct children, but their children
// (what npx, uvx and `sh -c` wrappers start, a server's own workers) are
// re-parented to init and live on. See #17, item 7.
//
// Tree, with process groups in brackets:
//
//	switchboard
//	└─ shim [own group]   Pdeathsig SIGTERM, child subreaper
//	   └─ server [own group]   Pdeathsig SIGKILL (if the shim itself is killed)
//	      └─ grandchildren [the server's group, or any other]
//
// The server inherits the shim's stdin, stdout and stderr, which are
// switchboard's pipes, so no byte is copied. switchboard signals the
// server's group exactly as without a shim. When the server exits, the
// shim kills what is left of its group and every descendant re-parented to
// it (it is their subreaper, so even those that called setsid come back to
// it), then exits the way the server did: the same exit code, or killed by
// the same signal. When switchboard dies, the shim gets SIGTERM, sends
// SIGTERM to the server's group, and kills everything after shimGrace.

const shimSupported = true

// shimReportFD is the shim's descriptor on which it reports the server's PID
// ("pid N") or why it could not start it ("errno N MESSAGE" for a failed
// system call, else "err MESSAGE"), then closes.
const shimReportFD = 3

// shimGrace is how long the shim lets the server's group handle SIGTERM
// after switchboard died, before it kills the whole tree.
const shimGrace = 500 * time.Millisecond

// shimStartTimeout bounds how long switchboard waits for the shim's report.
const shimStartTimeout = 10 * time.Second

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER

// shimCommand returns the command that runs path with args under a shim, in
// its own process group, with Pdeathsig set to SIGTERM so that the shim can
// clean up when switchboard dies, and the pipe on which the shim reports.
// It runs /proc/self/exe, which still names this binary after it was
// replaced on disk.
func shimCommand(path string, args []string) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = append([]string{"switchboard", ShimCommand, strconv.Itoa(os.Getpid()), path}, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return cmd
}

// startShim starts cmd (from shimCommand) and returns the server's PID once
// the shim reported it. On failure the shim is reaped.
func startShim(cmd *exec.Cmd) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 0, err
	}
	_ = r.SetReadDeadline(time.Now().Add(shimStartTimeout))
	line, rerr := bufio.NewReader(r).ReadString('\n')
	kind, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	pid, perr := strconv.Atoi(rest)
	switch {
	case kind == "pid" && perr == nil && pid > 0:
		return pid, nil
	case kind == "err":
		err = errors.New(rest)
	case kind == "errno":
		code, msg, _ := strings.Cut(rest, " ")
		n, cerr := strconv.Atoi(code)
		if cerr != nil {
			err = fmt.Errorf("shim: bad report %q", line)
			break
		}
		err = &shimStartError{msg: msg, errno: syscall.Errno(n)}
	case rerr != nil:
		err = fmt.Errorf("shim: no report: %w", rerr)
	default:
		err = fmt.Errorf("shim: bad report %q", line)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return 0, err
}

// shimStartError is the server's failed exec as the shim reported it.
type shimStartError struct {
	msg   string
	errno syscall.Errno
}

func (e *shimStartError) Error() string { return e.msg }
func (e *shimStartError) Unwrap() error { return e.errno }

// RunShim runs the shim: args are switchboard's PID, the server's path and
// its arguments. It starts the server, waits for it, and returns (or dies
// by the server's signal) as the server did. The switchboard binary calls it
// for ShimCommand; it is not meant for anything else.
func RunShim(args []string) int {
	// The server's Pdeathsig follows the thread that forked it; the main
	// thread lives as long as the shim.
	runtime.LockOSThread()
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	syscall.CloseOnExec(shimReportFD)
	report := os.NewFile(shimReportFD, "report")
	fail := func(err error) int {
		msg := strings.ReplaceAll(err.Error(), "\n", " ")
		if errno := syscall.Errno(0); errors.As(err, &errno) {
			// The errno tells switchboard whether trying again can help.
			fmt.Fprintf(report, "errno %d %s\n", int(errno), msg)
		} else {
			fmt.Fprintf(report, "err %s\n", msg)
		}
		report.Close()
		return 127
	}
	if len(args) < 2 {
		return fail(errors.New("shim: usage: PARENT_PID PATH [ARG...]"))
	}
	parent, err := strconv.Atoi(args[0])
	if err != nil {
		return fail(fmt.Errorf("shim: parent pid: %w", err))
	}
	if os.Getppid() != parent {
		return fail(errors.New("shim: switchboard exited before the server started"))
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return fail(fmt.Errorf("shim: set child subreaper: %w", e))
	}
	pid, err := syscall.ForkExec(args[1], args[1:], &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return fail(fmt.Errorf("fork/exec %s: %w", args[1], err))
	}
	fmt.Fprintf(report, "pid %d\n", pid)
	report.Close()
	// Only the server holds switchboard's ends of stdin and stdout now, so
	// switchboard sees EOF as soon as the server is gone.
	if null, err := syscall.Open(os.DevNull, syscall.O_RDWR|syscall.O_CLOEXEC, 0); err == nil {
		_ = syscall.Dup3(null, 0, 0)
		_ = syscall.Dup3(null, 1, 0)
		_ = syscall.Close(null)
	}

	var status syscall.WaitStatus
	var grace <-chan time.Time
	orphaned := false
wait:
	for {
		if reapShimChildren(pid, &status) {
			break
		}
		select {
		case s := <-sigs:
			if s == syscall.SIGCHLD || orphaned || os.Getppid() == parent {
				// A SIGTERM with switchboard still our parent came from
				// elsewhere (the exit of the OS thread that started us
				// sends Pdeathsig too); the server decides for itself.
				continue
			}
			orphaned = true
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			grace = time.After(shimGrace)
		case <-grace:
			break wait
		}
	}
	killTree(pid)
	if orphaned {
		return 1
	}
	return exitLike(status)
}

// reapShimChildren reaps every exited child without blocking and reports
// whether the server (pid) was among them, storing its status. Re-parented
// orphans are reaped here too, so none stays a zombie.
func reapShimChildren(pid int, status *syscall.WaitStatus) bool {
	done := false
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || p <= 0 {
			return done
		}
		if p == pid {
			*status, done = ws, true
		}
	}
}

// killTree kills the server's process group, then every child of the shim
// until there is none. A killed child's own children are re-parented to the
// shim (its subreaper), so the loop reaches every descendant, whatever group
// or session it moved to.
func killTree(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for {
		for _, c := range shimChildren() {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: no child left
			return
		}
	}
}

// shimChildren lists the shim's children from /proc/self/task/*/children,
// or by scanning /proc when the kernel lacks that file.
func shimChildren() []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/self/task")
	found := false
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		found = true
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	if found {
		return out
	}
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(self) {
			out = append(out, n)
		}
	}
	return out
}

// exitLike ends the shim the way the server ended: with its exit code, or
// killed by its signal (without a core file of the shim's own).
func exitLike(ws syscall.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		sig := ws.Signal()
		_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
		signal.Reset()
		// The Go runtime handles SIGSEGV, SIGABRT and the like itself
		// (a traceback, exit 2); the default action is what the server got.
		var dfl struct {
			handler, flags, restorer, mask uint64
		}
		_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // a signal whose default is to ignore it
		return 128 + int(sig)
	}
	return 1
}
