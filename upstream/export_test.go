package upstream

import (
	"errors"
	"io"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SetStopTimings shortens the stop sequence's pauses.
func SetStopTimings(grace, term time.Duration) (reset func()) {
	old := stopTimings
	stopTimings.grace, stopTimings.term = grace, term
	return func() { stopTimings = old }
}

// SetTestTransport makes every Handle connect through f instead of starting
// a process or dialing a URL.
func SetTestTransport(f func(Spec) (mcp.Transport, error)) (reset func()) {
	old := testTransport
	testTransport = f
	return func() { testTransport = old }
}

// SetMaxLine lowers the longest stdout line a stdio connection accepts.
func SetMaxLine(n int) (reset func()) {
	old := maxLine
	maxLine = n
	return func() { maxLine = old }
}

// BackoffDelay is the unscaled delay before attempt n, with jitter.
func BackoffDelay(n int) time.Duration { return backoffDelay(n, 0, 0) }

// BreakerConsecutiveFailures reports the breaker's current failure run.
func BreakerConsecutiveFailures(h *Handle) uint32 {
	return h.calls.brk.consecutiveFailures()
}

// StderrWriter is the child stderr re-logger.
type StderrWriter interface {
	io.Writer
	Flush()
}

// NewStderrWriter returns the re-logger a child's stderr is written to.
func NewStderrWriter(log hclog.Logger) StderrWriter { return newLineWriter(log, nil) }

// NewStderrWriterTail is NewStderrWriter that also keeps the last lines;
// tail returns them.
func NewStderrWriterTail(log hclog.Logger) (w StderrWriter, tail func() []string) {
	t := &stderrTail{}
	return newLineWriter(log, t), t.get
}

// LineLevel is the level a child's stderr line names.
var LineLevel = lineLevel

// ChildEnv builds a child's environment.
var ChildEnv = childEnv

// Stderr limits.
const (
	MaxStderrLine   = maxStderrLine
	StderrBurst     = stderrBurst
	StderrTailLines = stderrTailLines
	StderrTailLine  = stderrTailLine
)

// SetShim makes stdio children start under the shim (on Linux); the test
// binary's TestMain must then dispatch ShimCommand to RunShim.
func SetShim(on bool) (reset func()) {
	old := shimOn
	shimOn = on && shimSupported
	return func() { shimOn = old }
}

// StartShim starts path with args under the shim, as a stdio child is, and
// returns the shim's command and the server's PID.
func StartShim(path string, args []string) (*exec.Cmd, int, error) {
	cmd := shimCommand(path, args)
	if cmd == nil {
		return nil, 0, errors.New("no shim on this platform")
	}
	pid, err := startShim(cmd)
	return cmd, pid, err
}
