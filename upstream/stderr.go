package upstream

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hashicorp/go-hclog"
)

// Limits of child stderr re-logging.
const (
	maxStderrLine    = 4096 // bytes kept of one line
	stderrBurst      = 200  // lines logged before rate limiting starts
	stderrPerSecond  = 50   // lines per second after that
	stderrBufferSize = 64 << 10
	stderrTailLines  = 20  // lines of a server's stderr its Status keeps
	stderrTailLine   = 512 // bytes kept of each of them
)

// lineWriter re-logs a child's stderr line by line under the server's logger,
// at the level the line names (lineLevel: info when it names none), and at
// error for everything after a Go panic. Lines are capped in length and rate; dropped lines are counted and
// reported. It never passes bytes through unparsed. Safe for concurrent use.
type lineWriter struct {
	log  hclog.Logger
	kind lineKind
	tail *stderrTail // nil: keep none

	mu       sync.Mutex
	buf      []byte
	panicked bool
	tokens   float64
	last     time.Time
	dropped  int
	report   *time.Timer // reports dropped lines after a burst
}

// lineKind is what a lineWriter logs.
type lineKind int

const (
	childStderr lineKind = iota
	skippedStdout
)

// newLineWriter re-logs a child's stderr; tail, if not nil, keeps its last
// lines.
func newLineWriter(log hclog.Logger, tail *stderrTail) *lineWriter {
	return &lineWriter{log: log, tail: tail, tokens: stderrBurst}
}

// newNoiseWriter logs, with the same caps, the lines a child wrote to stdout
// that are not JSON-RPC messages (the stdio connection skips them).
func newNoiseWriter(log hclog.Logger) *lineWriter {
	return &lineWriter{log: log, kind: skippedStdout, tokens: stderrBurst}
}

// Line logs one whole line.
func (w *lineWriter) Line(line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emitLocked(line)
}

// Write implements io.Writer.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			if len(w.buf) > stderrBufferSize {
				w.emitLocked(w.buf)
				w.buf = w.buf[:0]
			}
			break
		}
		if len(w.buf) > 0 {
			w.buf = append(w.buf, p[:i]...)
			w.emitLocked(w.buf)
			w.buf = w.buf[:0]
		} else {
			w.emitLocked(p[:i])
		}
		p = p[i+1:]
	}
	return n, nil
}

// Flush logs a trailing partial line.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emitLocked(w.buf)
		w.buf = w.buf[:0]
	}
	w.reportDroppedLocked()
}

// emitLocked requires w.mu.
func (w *lineWriter) emitLocked(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if w.tail != nil {
		// Before rate limiting: the last lines before a crash are the
		// ones that tell why.
		w.tail.add(line)
	}
	now := time.Now()
	if !w.last.IsZero() {
		w.tokens = min(stderrBurst, w.tokens+now.Sub(w.last).Seconds()*stderrPerSecond)
	}
	w.last = now
	if w.tokens < 1 {
		w.dropped++
		if w.report == nil {
			// A burst followed by silence is reported too, once the
			// burst is over.
			w.report = time.AfterFunc(time.Second, func() {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.report = nil
				w.reportDroppedLocked()
			})
		}
		return
	}
	w.tokens--
	w.reportDroppedLocked()

	truncated := false
	if len(line) > maxStderrLine {
		line, truncated = line[:maxStderrLine], true
	}
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	if strings.HasPrefix(s, "panic: ") || strings.HasPrefix(s, "fatal error: ") {
		w.panicked = true
	}
	level := lineLevel(s)
	if w.panicked {
		level = hclog.Error
	}
	switch {
	case w.kind == skippedStdout && truncated:
		w.log.Warn("stdout line skipped: not JSON-RPC", "line", s, "truncated", true)
	case w.kind == skippedStdout:
		w.log.Warn("stdout line skipped: not JSON-RPC", "line", s)
	case truncated:
		w.log.Log(level, "stderr", "line", s, "truncated", true)
	default:
		w.log.Log(level, "stderr", "line", s)
	}
}

// reportDroppedLocked requires w.mu.
func (w *lineWriter) reportDroppedLocked() {
	if w.dropped > 0 {
		switch w.kind {
		case skippedStdout:
			w.log.Warn("skipped stdout lines dropped", "count", w.dropped)
		default:
			w.log.Warn("stderr lines dropped", "count", w.dropped)
		}
		w.dropped = 0
	}
}

// stderrTail keeps the last stderrTailLines lines of a server's stderr,
// across restarts, for its Status: "process exited before initialize
// finished" says little, the server's last words say why (issue 18). Lines
// are cut to stderrTailLine bytes, and escape sequences and control
// characters are dropped, since `switchboard status` prints them to a
// terminal. It is safe for concurrent use.
type stderrTail struct {
	mu    sync.Mutex
	lines []string
}

func (t *stderrTail) add(line []byte) {
	s := strings.ToValidUTF8(string(line[:min(len(line), 4*stderrTailLine)]), "\uFFFD")
	s = ansiEscape.ReplaceAllString(s, "")
	s = strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > stderrTailLine {
		s = strings.ToValidUTF8(s[:stderrTailLine], "") + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == stderrTailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:stderrTailLines-1]
	}
	t.lines = append(t.lines, s)
}

// get returns a copy of the kept lines, oldest first; nil if none.
func (t *stderrTail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.lines)
}
