package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
)

// auditRecord is one line of the audit log: one per tool call.
type auditRecord struct {
	Time       time.Time `json:"time"`
	View       string    `json:"view"`
	Token      string    `json:"token,omitempty"` // the token's config path, never the token
	Session    string    `json:"session,omitempty"`
	Tool       string    `json:"tool"`
	Server     string    `json:"server"`
	Original   string    `json:"original"`
	DurationMS float64   `json:"duration_ms"`
	Outcome    string    `json:"outcome"`
	Bytes      int64     `json:"result_bytes"`
	Suspicious []string  `json:"suspicious,omitempty"`
	ArgsSHA256 string    `json:"arguments_sha256,omitempty"`
	Arguments  string    `json:"arguments,omitempty"` // only with audit.arguments, redacted
}

// auditLog writes JSON lines to stderr or a file. A file is reopened on
// SIGHUP (reopen) and when it was renamed away (logrotate), checked at most
// once a second. Safe for concurrent use.
type auditLog struct {
	mu      sync.Mutex
	path    string
	w       io.Writer
	f       *os.File
	checked time.Time
	args    bool
	redact  func(string) string
}

func newAuditLog(c *config.Audit, stderr io.Writer, redact func(string) string) (*auditLog, error) {
	if c == nil || (c.Enabled != nil && !*c.Enabled) {
		return nil, nil
	}
	a := &auditLog{path: c.File, args: c.Arguments, redact: redact, w: stderr}
	if c.File != "" && c.File != "-" {
		if err := a.reopenLocked(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// reopenLocked requires a.mu (or exclusive use).
func (a *auditLog) reopenLocked() error {
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

// reopen is called on SIGHUP.
func (a *auditLog) reopen() error {
	if a == nil || a.f == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reopenLocked()
}

func (a *auditLog) write(r *auditRecord, rawArgs []byte) {
	if a == nil {
		return
	}
	if len(rawArgs) > 0 {
		sum := sha256.Sum256(rawArgs)
		r.ArgsSHA256 = hex.EncodeToString(sum[:])
		if a.args {
			r.Arguments = a.redact(string(rawArgs))
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return
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
	_, _ = a.w.Write(b)
}

func mustStat(f *os.File) os.FileInfo {
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	return st
}

func (a *auditLog) close() {
	if a == nil || a.f == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_ = a.f.Close()
}
