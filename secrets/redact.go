package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Redacted replaces every registered value in redacted text.
const Redacted = "[REDACTED]"

// MinRedactLen is the shortest value a Set registers. Shorter values are
// ignored: a one- to three-byte "secret" ("1", "on", "abc") is no credential
// worth the name, and replacing every occurrence of it would shred ordinary
// log lines, numbers and words, and would reveal it all the same by where the
// marker appears. The same bound applies to each derived form of a value.
const MinRedactLen = 4

// maxRedactRounds bounds re-scanning: replacing a value can, together with
// the text around it, form another registered value (or the same one), so
// Redact repeats until nothing matches.
const maxRedactRounds = 8

// Set is the redactor: every registered value, and its encoded forms
// (standard and URL base64, with and without padding and at every byte
// alignment, so a value inside a base64 blob such as a Basic auth header is
// caught too; hex in either case; URL query and path escaping; JSON and Go
// string escaping; and each line of a multi-line value), is replaced by
// Redacted, and so is a form of at least 8 bytes spread out by whitespace
// or invisible characters (split across lines, spaced out, interleaved with
// zero-width characters; see redact_spread.go).
//
// Values shorter than MinRedactLen, and values that occur inside Redacted
// itself, are not registered.
//
// A Set is safe for concurrent use. Redact takes no lock: Add rebuilds a
// strings.Replacer under a mutex and publishes it atomically, so Redact is
// one atomic load when nothing is registered.
type Set struct {
	mu     sync.Mutex
	values map[string]struct{} // every registered form
	state  atomic.Pointer[strings.Replacer]
	spread atomic.Pointer[spreadMatcher] // see redact_spread.go
}

// NewSet returns an empty Set.
func NewSet() *Set { return &Set{values: map[string]struct{}{}} }

// Add registers values. It is cheap to call again with known values.
func (s *Set) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string]struct{}{}
	}
	changed := false
	for _, v := range values {
		// A value inside the marker could never be told apart from it.
		if len(v) < MinRedactLen || strings.Contains(Redacted, v) {
			continue
		}
		if _, ok := s.values[v]; ok {
			continue
		}
		for _, f := range forms(v) {
			if len(f) < MinRedactLen || strings.Contains(Redacted, f) {
				continue
			}
			if _, ok := s.values[f]; !ok {
				s.values[f] = struct{}{}
				changed = true
			}
		}
	}
	if !changed {
		return
	}
	olds := make([]string, 0, len(s.values))
	for v := range s.values {
		olds = append(olds, v)
	}
	// strings.Replacer tries patterns in argument order at each position:
	// longest first, so a value is never half-replaced by a shorter one.
	slices.SortFunc(olds, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(olds))
	for _, v := range olds {
		pairs = append(pairs, v, Redacted)
	}
	s.state.Store(strings.NewReplacer(pairs...))
	s.spread.Store(newSpreadMatcher(olds))
}

// Len returns the number of registered strings, derived forms included; a
// nil Set has none. A Set only grows, so Len tells whether it changed.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

// Redact returns str with every registered value replaced by Redacted. A nil
// Set redacts nothing.
func (s *Set) Redact(str string) string {
	if s == nil {
		return str
	}
	r := s.state.Load()
	if r == nil {
		return str
	}
	for range maxRedactRounds {
		next := r.Replace(str)
		if next == str {
			return s.spread.Load().redact(str)
		}
		str = next
	}
	// Pathological overlap of values with the marker: give nothing away.
	return Redacted
}

// forms returns v and its encoded forms.
func forms(v string) []string {
	out := []string{v}
	add := func(f string) { out = append(out, f) }

	// base64 of the value alone, then the characters that depend only on
	// the value when it sits at byte offset 0, 1 or 2 of a longer input.
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(v)))
		add(enc.WithPadding(base64.NoPadding).EncodeToString([]byte(v)))
		for k := range 3 {
			in := append(make([]byte, k), v...)
			e := enc.WithPadding(base64.NoPadding).EncodeToString(in)
			from := (8*k + 5) / 6
			to := 8 * (k + len(v)) / 6
			if to > len(e) {
				to = len(e)
			}
			// A short core would match unrelated base64 text.
			if to-from >= 8 {
				add(e[from:to])
			}
		}
	}
	add(hex.EncodeToString([]byte(v)))
	add(strings.ToUpper(hex.EncodeToString([]byte(v))))
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	if b, err := json.Marshal(v); err == nil {
		add(string(b[1 : len(b)-1]))
	}
	var jb bytes.Buffer
	je := json.NewEncoder(&jb)
	je.SetEscapeHTML(false)
	if je.Encode(v) == nil {
		q := strings.TrimSpace(jb.String())
		add(q[1 : len(q)-1])
	}
	q := strconv.Quote(v)
	add(q[1 : len(q)-1])
	if strings.ContainsAny(v, "\r\n") {
		for line := range strings.Lines(v) {
			add(strings.TrimRight(line, "\r\n"))
		}
	}
	return out
}

// Writer is a redacting io.Writer for log output, made by Set.Writer.
//
// It passes whole lines: bytes after the last newline of a Write are held
// back until the rest of their line arrives, so a value split across Write
// calls within one line is still caught (hclog writes exactly one line per
// Write, so nothing waits then). A held-back partial line is flushed, redacted
// as it stands, when it grows past 64 KiB, when no further Write arrives within
// 100 ms, and on Flush or Close; a value that straddles such a flush escapes
// redaction. Values spanning lines are caught line by line (Set registers each
// line of a multi-line value).
//
// A Writer is safe for concurrent use.
type Writer struct {
	set *Set
	w   io.Writer

	mu     sync.Mutex
	buf    []byte
	timer  *time.Timer
	closed bool
}

// Writer returns a redacting writer that writes to w.
func (s *Set) Writer(w io.Writer) *Writer { return &Writer{set: s, w: w} }

const (
	writerMaxPending = 64 << 10
	writerIdleFlush  = 100 * time.Millisecond
)

// Write redacts and writes every complete line in p (together with a held
// partial line) and holds the rest. It returns len(p) unless the underlying
// writer fails.
func (rw *Writer) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.closed {
		return rw.emitLocked(p, len(p))
	}
	if len(rw.buf) == 0 && len(p) > 0 && p[len(p)-1] == '\n' {
		return rw.emitLocked(p, len(p))
	}
	rw.buf = append(rw.buf, p...)
	var err error
	if i := bytes.LastIndexByte(rw.buf, '\n'); i >= 0 {
		_, err = rw.emitLocked(rw.buf[:i+1], 0)
		rw.buf = append(rw.buf[:0], rw.buf[i+1:]...)
	}
	if len(rw.buf) > writerMaxPending {
		if _, e := rw.emitLocked(rw.buf, 0); err == nil {
			err = e
		}
		rw.buf = rw.buf[:0]
	}
	rw.armLocked()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// emitLocked writes the redaction of b and reports n written on success.
// It requires rw.mu.
func (rw *Writer) emitLocked(b []byte, n int) (int, error) {
	if len(b) == 0 {
		return n, nil
	}
	out := rw.set.Redact(string(b))
	if _, err := io.WriteString(rw.w, out); err != nil {
		return 0, err
	}
	return n, nil
}

// armLocked (re)starts the idle flush while a partial line is held. It
// requires rw.mu.
func (rw *Writer) armLocked() {
	if len(rw.buf) == 0 {
		if rw.timer != nil {
			rw.timer.Stop()
		}
		return
	}
	if rw.timer == nil {
		rw.timer = time.AfterFunc(writerIdleFlush, func() { _ = rw.Flush() })
		return
	}
	rw.timer.Reset(writerIdleFlush)
}

// Flush writes a held partial line, redacted.
func (rw *Writer) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	_, err := rw.emitLocked(rw.buf, 0)
	rw.buf = rw.buf[:0]
	if rw.timer != nil {
		rw.timer.Stop()
	}
	return err
}

// Close flushes a held partial line and stops the idle timer; later Writes
// pass through unbuffered (still redacted). It does not close the
// underlying writer. Close is idempotent and safe to call concurrently.
func (rw *Writer) Close() error {
	err := rw.Flush()
	rw.mu.Lock()
	rw.closed = true
	rw.mu.Unlock()
	return err
}
