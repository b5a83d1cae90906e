package upstream

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Limits of child stderr re-logging.
const (
	maxStderrLine    = 4096 // bytes kept of one line
	stderrBurst      = 200  // lines logged before rate limiting starts
	stderrPerSecond  = 50   // lines per second after that
	stderrBufferSize = 64 << 10
)

// lineWriter re-logs a child's stderr line by line under the server's logger:
// warn by default, error for lines that say so and for everything after a
// Go panic. Lines are capped in length and rate; dropped lines are counted and
// reported. It never passes bytes through unparsed. Safe for concurrent use.
type lineWriter struct {
	log  hclog.Logger
	kind lineKind

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

func newLineWriter(log hclog.Logger) *lineWriter {
	return &lineWriter{log: log, tokens: stderrBurst}
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
	level := hclog.Warn
	if w.panicked || hasLevelPrefix(s, "ERROR") || hasLevelPrefix(s, "FATAL") {
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

func hasLevelPrefix(s, level string) bool {
	return strings.HasPrefix(s, "["+level+"]") || strings.HasPrefix(s, level+":") ||
		strings.Contains(s, `"@level":"`+strings.ToLower(level)+`"`) || strings.Contains(s, `"level":"`+strings.ToLower(level)+`"`)
}
