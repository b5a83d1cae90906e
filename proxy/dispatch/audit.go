package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// auditRecord is one line of the audit log: one per tool call.
type auditRecord struct {
	Time       time.Time `json:"time"`
	View       string    `json:"view"`
	Token      string    `json:"token,omitempty"` // the token's config path (oauth:SUBJECT for an identity provider's), never the token
	Session    string    `json:"session,omitempty"`
	Tool       string    `json:"tool"`
	Server     string    `json:"server"`
	Original   string    `json:"original"`
	CalledAs   string    `json:"called_as,omitempty"` // the name called by, when not Tool (an app's)
	DurationMS float64   `json:"duration_ms"`
	Outcome    string    `json:"outcome"`
	Bytes      int64     `json:"result_bytes"`
	Suspicious []string  `json:"suspicious,omitempty"`
	ArgsSHA256 string    `json:"arguments_sha256,omitempty"`
	Arguments  string    `json:"arguments,omitempty"` // only with audit.arguments, redacted
}

// AuditLog writes JSON lines to stderr or a file. A file is reopened on
// SIGHUP (reopen) and when it was renamed away (logrotate), checked at most
// once a second. A record that cannot be written (a full disk) is counted,
// logged (rate-limited, auditHealth) and shown in /status; with onError
// "refuse" tool calls are refused until records can be written again. Safe
// for concurrent use.
type AuditLog struct {
	mu      sync.Mutex
	path    string
	w       io.Writer
	f       *os.File
	checked time.Time
	args    bool
	refuse  bool
	redact  func(string) string
	log     hclog.Logger
	now     func() time.Time
	health  auditHealth // guarded by mu
	failing atomic.Bool // health.since is set: read without mu on every call
}

// auditHealth is the state of the audit log's writes.
type auditHealth struct {
	failures int64     // records that could not be written, in all
	lastErr  error     // the last write error
	lastAt   time.Time // when it happened
	since    time.Time // first failure of the current run; zero while writes succeed
	run      int64     // records lost in the current run
	logged   time.Time // the last log line of the current run
	unlogged int64     // records lost since that line
	pending  []byte    // the last record that could not be written, retried by retry
	retried  time.Time // the last retry
	partial  bool      // a write failed part way: the next one starts a new line
}

// auditLogEvery bounds the log lines of a run of failed writes: the first
// is logged at once, then at most one a minute with the count since.
const auditLogEvery = time.Minute

// AuditStatus is the state of the audit log shown in /status.
type AuditStatus struct {
	// File is the audit file, or "stderr".
	File    string `json:"file"`
	OnError string `json:"onError"`
	// Failing is set while the last write failed; FailingSince is the
	// first failure of that run.
	Failing      bool       `json:"failing"`
	FailingSince *time.Time `json:"failingSince,omitempty"`
	// WriteFailures counts the records that could not be written since the
	// audit log was opened (a changed audit setting opens it anew).
	WriteFailures int64      `json:"writeFailures"`
	LastError     string     `json:"lastError,omitempty"`
	LastErrorAt   *time.Time `json:"lastErrorAt,omitempty"`
}

func NewAuditLog(c *config.Audit, stderr io.Writer, redact func(string) string, log hclog.Logger) (*AuditLog, error) {
	if c == nil || (c.Enabled != nil && !*c.Enabled) {
		return nil, nil
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	a := &AuditLog{path: c.File, args: c.Arguments, refuse: c.OnError == config.AuditRefuse, redact: redact, w: stderr,
		log: log, now: time.Now}
	if c.File != "" && c.File != "-" {
		if err := a.reopenLocked(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// reopenLocked requires a.mu (or exclusive use).
func (a *AuditLog) reopenLocked() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if a.f != nil {
		_ = a.f.Close()
	}
	a.f, a.w = f, f
	return nil
}

// Reopen is called on SIGHUP.
func (a *AuditLog) Reopen() error {
	if a == nil || a.f == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reopenLocked()
}

// write writes the record of one call. It reports false when the record
// could not be written; the failure is logged and kept for /status here,
// the caller counts it.
func (a *AuditLog) write(r *auditRecord, rawArgs []byte) bool {
	if a == nil {
		return true
	}
	if len(rawArgs) > 0 {
		sum := sha256.Sum256(rawArgs)
		r.ArgsSHA256 = hex.EncodeToString(sum[:])
		if a.args {
			r.Arguments = a.redact(string(rawArgs))
		}
	}
	// A copy goes to the encoder: r stays on its caller's stack when
	// there is no audit log (json.Marshal's argument escapes).
	cp := *r
	b, err := json.Marshal(&cp)
	if err != nil {
		return true
	}
	b = append([]byte(a.redact(string(b))), '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil && time.Since(a.checked) > time.Second {
		a.checked = time.Now()
		if st, err := os.Stat(a.path); err != nil || !os.SameFile(st, mustStat(a.f)) {
			_ = a.reopenLocked()
		}
	}
	if err := a.writeLocked(b); err != nil {
		a.failedLocked(b, err)
		return false
	}
	a.recoveredLocked()
	return true
}

// writeLocked writes one line; after a line cut short it starts a new one,
// so the cut line stands alone. It requires a.mu.
func (a *AuditLog) writeLocked(b []byte) error {
	if a.health.partial {
		b = append([]byte{'\n'}, b...)
	}
	n, err := a.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		a.health.partial = a.health.partial || n > 0
		return err
	}
	a.health.partial = false
	return nil
}

// failedLocked records a write that failed, and logs the first failure of
// a run at once and the following ones at most once per auditLogEvery. It
// requires a.mu.
func (a *AuditLog) failedLocked(b []byte, err error) {
	h, now := &a.health, a.now()
	h.failures++
	h.run++
	h.unlogged++
	h.lastErr, h.lastAt, h.pending = err, now, b
	switch {
	case h.since.IsZero():
		h.since, h.logged, h.unlogged = now, now, 0
		a.failing.Store(true)
		if a.refuse {
			a.log.Error("audit write failed: tool calls are refused until records can be written", "error", err)
		} else {
			a.log.Error("audit write failed: tool calls go on without their records", "error", err)
		}
	case now.Sub(h.logged) >= auditLogEvery:
		a.log.Error("audit writes still failing", "count", h.unlogged, "duration", now.Sub(h.since).Round(time.Second), "error", err)
		h.logged, h.unlogged = now, 0
	}
}

// recoveredLocked ends a run of failed writes after a write succeeded. It
// requires a.mu.
func (a *AuditLog) recoveredLocked() {
	h := &a.health
	if h.since.IsZero() {
		return
	}
	a.log.Warn("audit writes resumed", "count", h.run, "duration", a.now().Sub(h.since).Round(time.Second))
	h.since, h.run, h.unlogged, h.pending = time.Time{}, 0, 0, nil
	a.failing.Store(false)
}

// Retry writes the last record that could not be written again, at most
// once per every, and reports whether writes fail still. Without calls
// nothing else would notice that the disk has room again: /readyz (which
// keeps calls away while writes fail) and refused calls retry.
func (a *AuditLog) Retry(every time.Duration) (failing bool) {
	if a == nil || !a.failing.Load() {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	h, now := &a.health, a.now()
	if h.since.IsZero() {
		return false
	}
	if now.Sub(h.retried) < every || h.pending == nil {
		return true
	}
	h.retried = now
	if err := a.writeLocked(h.pending); err != nil {
		h.lastErr, h.lastAt = err, now
		return true
	}
	a.recoveredLocked()
	return false
}

// refusing reports whether a tool call must be refused: onError is
// "refuse" and records cannot be written (after one more try).
func (a *AuditLog) refusing() bool {
	return a != nil && a.refuse && a.failing.Load() && a.Retry(0)
}

// Status is the audit log's state for /status; nil when it is off.
func (a *AuditLog) Status() *AuditStatus {
	if a == nil {
		return nil
	}
	st := &AuditStatus{File: a.path, OnError: config.AuditContinue}
	if st.File == "" || st.File == "-" {
		st.File = "stderr"
	}
	if a.refuse {
		st.OnError = config.AuditRefuse
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.health
	st.WriteFailures = h.failures
	if h.lastErr != nil {
		st.LastError, st.LastErrorAt = h.lastErr.Error(), &h.lastAt
	}
	if !h.since.IsZero() {
		st.Failing, st.FailingSince = true, &h.since
	}
	return st
}

func mustStat(f *os.File) os.FileInfo {
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	return st
}

func (a *AuditLog) Close() {
	if a == nil || a.f == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_ = a.f.Close()
}

// SetOutput makes w stand for the audit file from now on: records are
// written to w and the file is closed (a test's disk that fills and frees).
func (a *AuditLog) SetOutput(w io.Writer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		_ = a.f.Close()
	}
	a.f, a.w = nil, w
}
