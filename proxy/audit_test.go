package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
)

// TestAuditFullDiskRefusesCalls runs a proxy whose audit file is /dev/full
// (every write fails with ENOSPC) and audit.onError refuse: the first call
// runs and its lost record is logged, counted in
// switchboard_audit_write_failures_total and shown in /status; /readyz
// fails; the next calls are refused without reaching the server; once the
// audit log can be written again, calls run and /readyz passes.
func TestAuditFullDiskRefusesCalls(t *testing.T) {
	var logs lineLog
	tp := startProxyWith(t, pipelineConfig(nil, nil, map[string]any{
		"audit": map[string]any{"file": "/dev/full", "onError": "refuse"},
	}), "http", func(o *Options) { o.Stderr = io.MultiWriter(&logs, &tlogWriter{t: t}) })
	cs := tp.connect(t, nil, nil)
	waitTool(t, cs, "mcp_echo_calls")
	if code, body := get(t, tp.admin, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before any call: %d %s", code, body)
	}

	if res, err := call(cs, "mcp_echo_calls", nil); err != nil || res.IsError {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	if !strings.Contains(logs.String(), "audit write failed") || !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("lost record not logged:\n%s", logs.String())
	}
	st := status(t, tp.admin)
	if a := st.Audit; a == nil || !a.Failing || a.WriteFailures != 1 || a.File != "/dev/full" ||
		!strings.Contains(a.LastError, "no space left on device") || a.FailingSince == nil {
		t.Errorf("/status audit: %+v", st.Audit)
	}
	if code, body := get(t, tp.admin, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"auditFailing":true`) {
		t.Errorf("/readyz with audit writes failing: %d %s", code, body)
	}

	for range 3 {
		res, err := call(cs, "mcp_echo_calls", nil)
		if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "audit trail cannot be written") {
			t.Fatalf("call while the audit log cannot be written: %+v, %v; want a refusal", res, err)
		}
	}
	_, metrics := get(t, tp.admin, "/metrics")
	if !strings.Contains(metrics, "switchboard_audit_write_failures_total 4") {
		t.Errorf("metrics lack switchboard_audit_write_failures_total 4:\n%s", grepLines(metrics, "audit"))
	}
	if !strings.Contains(metrics, `outcome="audit_unavailable"`) {
		t.Errorf("refused calls not counted by outcome:\n%s", grepLines(metrics, "tool_calls_total"))
	}

	// Room again: an injected writer stands for the audit file.
	var w lineLog
	tp.p.serving.Load().Audit.SetOutput(&w)
	testutil.Eventually(t, 5*time.Second, "/readyz passing once records can be written again", func() bool {
		code, _ := get(t, tp.admin, "/readyz")
		return code == http.StatusOK
	})
	res, err := call(cs, "mcp_echo_calls", nil)
	if err != nil || res.IsError || !strings.Contains(resultText(t, res), "calls=1;") {
		t.Errorf("call after recovery: %v, %v; want calls=1 (the refused calls never reached the server)", resultText(t, res), err)
	}
	if st := status(t, tp.admin); st.Audit == nil || st.Audit.Failing || st.Audit.WriteFailures != 4 {
		t.Errorf("/status audit after recovery: %+v", st.Audit)
	}
	if !strings.Contains(logs.String(), "audit writes resumed") {
		t.Errorf("recovery not logged:\n%s", logs.String())
	}
	if recs := w.Matching(`"tool":"mcp_echo_calls"`); len(recs) != 2 {
		t.Errorf("%d records after recovery, want 2 (the retried one and the call's): %q", len(recs), w.String())
	}
}

// get reads an admin endpoint.
func get(t testing.TB, admin, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + admin + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
