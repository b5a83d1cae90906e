package dispatch

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

// diskWriter is an audit writer whose disk can be full (ENOSPC) or not.
type diskWriter struct {
	mu   sync.Mutex
	full bool
	cut  int // with full: bytes written before the error
	buf  bytes.Buffer
}

func (w *diskWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.full {
		n := min(w.cut, len(b))
		w.buf.Write(b[:n])
		return n, &writeError{syscall.ENOSPC}
	}
	return w.buf.Write(b)
}

func (w *diskWriter) set(full bool, cut int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.full, w.cut = full, cut
}

func (w *diskWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
}

// writeError is what an *os.File returns on a full disk.
type writeError struct{ errno syscall.Errno }

func (e *writeError) Error() string { return "write /var/log/audit.log: " + e.errno.Error() }
func (e *writeError) Unwrap() error { return e.errno }

// TestAuditWriteFailureLoggedAndCleared pins the state of an audit log
// whose disk is full (#reliability-3, item 1): the first failure is logged
// at once, the next ones at most once a minute with their count, /status
// shows the run, a cut line does not swallow the next record, and the first
// write that works again ends the run with one line.
func TestAuditWriteFailureLoggedAndCleared(t *testing.T) {
	var logs testutil.Lines
	w := &diskWriter{}
	a, err := NewAuditLog(&config.Audit{OnError: config.AuditRefuse}, w, func(s string) string { return s },
		hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a.now = func() time.Time { return now }
	rec := func(tool string) *auditRecord { return &auditRecord{Time: now, Tool: tool, Outcome: "ok"} }

	if !a.write(rec("before"), nil) || a.refusing() || a.Retry(0) {
		t.Fatal("a healthy audit log reports a failure")
	}
	w.set(true, 10) // the first failure cuts its line after 10 bytes
	for i := range 5 {
		if a.write(rec("lost"), nil) {
			t.Fatalf("write %d on a full disk reported success", i)
		}
		w.set(true, 0)
		now = now.Add(time.Second)
	}
	if n := strings.Count(logs.String(), "audit write failed"); n != 1 {
		t.Errorf("%d first-failure lines for 5 failed writes, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "[ERROR]") || !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("first failure not logged at error with its cause:\n%s", logs.String())
	}
	st := a.Status()
	if !st.Failing || st.WriteFailures != 5 || !strings.Contains(st.LastError, "no space left on device") ||
		st.FailingSince == nil || !st.FailingSince.Equal(now.Add(-5*time.Second)) || st.OnError != "refuse" || st.File != "stderr" {
		t.Errorf("status on a full disk: %+v", st)
	}
	if !a.refusing() || !a.Retry(0) {
		t.Error("onError refuse: a full disk does not refuse calls")
	}

	now = now.Add(auditLogEvery)
	a.write(rec("lost"), nil)
	a.write(rec("lost"), nil) // within the minute: not logged
	if n := strings.Count(logs.String(), "audit writes still failing"); n != 1 || !strings.Contains(logs.String(), "count=5") {
		t.Errorf("after a minute: %d repeat lines, want 1 with count=5:\n%s", n, logs.String())
	}

	w.set(false, 0)
	if !a.write(rec("after"), nil) {
		t.Fatal("write on a disk with room again failed")
	}
	if !strings.Contains(logs.String(), "audit writes resumed") || !strings.Contains(logs.String(), "count=7") {
		t.Errorf("recovery not logged with the records lost:\n%s", logs.String())
	}
	if st := a.Status(); st.Failing || st.FailingSince != nil || st.WriteFailures != 7 {
		t.Errorf("status after recovery: %+v", st)
	}
	if a.refusing() || a.Retry(0) {
		t.Error("still refusing after a write worked")
	}
	lines := w.lines()
	if len(lines) != 3 || !strings.Contains(lines[0], `"before"`) || len(lines[1]) != 10 || !strings.Contains(lines[2], `"after"`) {
		t.Fatalf("audit file %q: want the record before, the cut line alone, the record after", lines)
	}
	var r auditRecord
	if err := json.Unmarshal([]byte(lines[2]), &r); err != nil {
		t.Errorf("the record after a cut line does not parse: %v", err)
	}

	// A retry (the readiness probe's) writes the pending record when the
	// disk has room again, with no call needed.
	w.set(true, 0)
	a.write(rec("pending"), nil)
	now = now.Add(time.Second)
	if !a.Retry(time.Minute) {
		t.Error("retry on a full disk reported success")
	}
	w.set(false, 0)
	if !a.Retry(time.Minute) {
		t.Error("retry ran again within its interval")
	}
	now = now.Add(time.Minute)
	if a.Retry(time.Minute) {
		t.Error("retry on a disk with room again still failing")
	}
	if lines := w.lines(); !strings.Contains(lines[len(lines)-1], `"pending"`) {
		t.Errorf("the pending record was not written by the retry: %q", lines)
	}

	// onError continue never refuses.
	c, _ := NewAuditLog(&config.Audit{}, &diskWriter{full: true}, func(s string) string { return s }, nil)
	c.write(rec("lost"), nil)
	if c.refusing() || !c.Status().Failing || c.Status().OnError != "continue" {
		t.Errorf("onError continue: refusing %v, status %+v", c.refusing(), c.Status())
	}
}
