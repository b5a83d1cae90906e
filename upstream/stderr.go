package upstream

import (
	"bytes"
	"io"
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
	// stderrDropPause is how long the reader of a child's stderr waits
	// between reads while lines are being dropped, so that a flood
	// arrives in a few large reads instead of one read per line. See #17.
	stderrDropPause = 50 * time.Millisecond
	// stderrFloodBufferSize is the pipe size asked for and the read size
	// once a child floods. With stderrDropPause, a flood is read at up to
	// 20 MiB/s; a child that writes faster blocks in its writes.
	stderrFloodBufferSize = 1 << 20
	stderrTailLines       = 20  // lines of a server's stderr its Status keeps
	stderrTailLine        = 512 // bytes kept of each of them
)

// lineWriter re-logs a child's stderr line by line under the server's logger,
// at the level the line names (lineLevel: info when it names none), and at
// error for everything after a Go panic. Lines are capped in length and rate; dropped lines are counted and
// reported. It never passes bytes through unparsed. Safe for concurrent use.
type lineWriter struct {
	log  hclog.Logger
	tail *stderrTail // nil: keep none
	kind lineKind

	mu       sync.Mutex
	buf      []byte
	panicked bool
	tokens   float64
	last     time.Time
	dropped  int
	report   *time.Timer // reports dropped lines after a burst

	// redact, if set, redacts two consecutive lines as one text; a line is
	// then held until the next one (or pendingWait) so that a secret
	// across the two is caught in both.
	redact  func(lines []string) []string
	pending *string     // the held line, redacted with its predecessor
	flush   *time.Timer // logs the held line after pendingWait
}

// pendingWait is how long a line waits for the next one when lines are
// redacted in pairs.
const pendingWait = 50 * time.Millisecond

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
	w.refillLocked(time.Now())
	w.emitLocked(line)
}

// ReadFrom implements io.ReaderFrom, which the copying goroutine of
// os/exec uses for a child's stderr. While the rate limit drops lines it
// pauses between reads (and on Linux enlarges the pipe, so that the child
// rarely blocks) and reads up to 1 MiB at a time: a flood then costs a few large reads whose lines are
// counted in bulk, instead of a read and a wake-up per line.
func (w *lineWriter) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, stderrBufferSize)
	var total int64
	grown := false
	for {
		n, err := r.Read(buf)
		if n > 0 {
			total += int64(n)
			_, _ = w.Write(buf[:n])
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		if w.dropping() {
			if !grown {
				growPipe(r)
				buf = make([]byte, stderrFloodBufferSize)
				grown = true
			}
			time.Sleep(stderrDropPause)
		}
	}
}

// dropping reports whether the next line would be dropped.
func (w *lineWriter) dropping() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tokens < 1
}

// Write implements io.Writer.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.refillLocked(time.Now())
	for len(p) > 0 {
		if w.tokens < 1 && len(w.buf) == 0 {
			// Over the limit: count the whole lines and keep only a
			// trailing partial one, without looking at each.
			last := bytes.LastIndexByte(p, '\n')
			if last < 0 {
				w.buf = append(w.buf, p...)
				break
			}
			w.dropLocked(bytes.Count(p[:last], []byte{'\n'}) + 1)
			if w.tail != nil {
				w.tail.addLast(p[:last])
			}
			p = p[last+1:]
			continue
		}
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
		w.refillLocked(time.Now())
		w.emitLocked(w.buf)
		w.buf = w.buf[:0]
	}
	w.flushPendingLocked()
	w.reportDroppedLocked()
}

// flushPendingLocked logs the held line, redacted on its own. It requires
// w.mu.
func (w *lineWriter) flushPendingLocked() {
	if w.pending == nil {
		return
	}
	s := w.redact([]string{*w.pending})[0]
	w.pending = nil
	w.logLocked(s)
}

// emitLocked requires w.mu.
func (w *lineWriter) emitLocked(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if w.tail != nil && w.redact == nil {
		// Before the rate limit: the last lines before a crash are the
		// ones that tell why. Lines a flood drops in bulk are not looked
		// at, so they are not kept either. (Redacted in pairs, a line is
		// kept once it is redacted: see logLocked.)
		w.tail.add(line)
	}
	if w.tokens < 1 {
		w.dropLocked(1)
		return
	}
	w.tokens--
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	if w.redact == nil {
		w.logLocked(s)
		return
	}
	if w.pending != nil {
		pair := w.redact([]string{*w.pending, s})
		w.logLocked(pair[0])
		s = pair[1]
	}
	w.pending = &s
	if w.flush == nil {
		w.flush = time.AfterFunc(pendingWait, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.flushPendingLocked()
		})
	} else {
		w.flush.Reset(pendingWait)
	}
}

// logLocked logs one line, cut to maxStderrLine (after redaction, so that
// the cut never leaves a piece of a secret). It requires w.mu.
func (w *lineWriter) logLocked(s string) {
	if w.tail != nil && w.redact != nil {
		w.tail.add([]byte(s))
	}
	truncated := false
	if len(s) > maxStderrLine {
		s, truncated = strings.ToValidUTF8(s[:maxStderrLine], ""), true
	}
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

// refillLocked adds the tokens earned since the last refill. It requires
// w.mu.
func (w *lineWriter) refillLocked(now time.Time) {
	if !w.last.IsZero() {
		w.tokens = min(stderrBurst, w.tokens+now.Sub(w.last).Seconds()*stderrPerSecond)
	}
	w.last = now
}

// dropLocked counts n dropped lines. It requires w.mu.
func (w *lineWriter) dropLocked(n int) {
	w.dropped += n
	if w.report == nil {
		// A burst followed by silence is reported too, once the burst
		// is over.
		w.report = time.AfterFunc(time.Second, func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.report = nil
			w.reportDroppedLocked()
		})
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
	// Kept raw (and bounded); cleaned only when read, which is rare.
	raw := string(line[:min(len(line), 4*stderrTailLine)])
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == stderrTailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:stderrTailLines-1]
	}
	t.lines = append(t.lines, raw)
}

// addLast keeps the last whole lines of p (which ends before a newline),
// without looking at the others: what a flood's dropped chunk leaves.
func (t *stderrTail) addLast(p []byte) {
	start := len(p)
	for n := 0; n < stderrTailLines && start > 0; n++ {
		start = bytes.LastIndexByte(p[:start-1], '\n') + 1
		if start == 0 {
			break
		}
	}
	for _, line := range bytes.Split(p[start:], []byte{'\n'}) {
		if line = bytes.TrimRight(line, "\r"); len(bytes.TrimSpace(line)) > 0 {
			t.add(line)
		}
	}
}

// cleanTailLine makes a kept line fit to print on a terminal: valid UTF-8, no
// escape sequences or control characters, at most stderrTailLine bytes.
func cleanTailLine(raw string) string {
	s := strings.ToValidUTF8(raw, "\uFFFD")
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
	return s
}

// get returns a copy of the kept lines, oldest first; nil if none.
func (t *stderrTail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return nil
	}
	out := make([]string, len(t.lines))
	for i, l := range t.lines {
		out[i] = cleanTailLine(l)
	}
	return out
}
