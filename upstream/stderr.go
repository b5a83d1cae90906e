package upstream

import (
	"bytes"
	"io"
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
	// stderrDropPause is how long the reader of a child's stderr waits
	// between reads while lines are being dropped, so that a flood
	// arrives in a few large reads instead of one read per line. See #17.
	stderrDropPause = 50 * time.Millisecond
	// stderrFloodBufferSize is the pipe size asked for and the read size
	// once a child floods. With stderrDropPause, a flood is read at up to
	// 20 MiB/s; a child that writes faster blocks in its writes.
	stderrFloodBufferSize = 1 << 20
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
	w.reportDroppedLocked()
}

// emitLocked requires w.mu.
func (w *lineWriter) emitLocked(line []byte) {
	if w.tokens < 1 {
		w.dropLocked(1)
		return
	}
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	w.tokens--

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

func hasLevelPrefix(s, level string) bool {
	return strings.HasPrefix(s, "["+level+"]") || strings.HasPrefix(s, level+":") ||
		strings.Contains(s, `"@level":"`+strings.ToLower(level)+`"`) || strings.Contains(s, `"level":"`+strings.ToLower(level)+`"`)
}
