package upstream_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/upstream"
)

func TestStderrLinesCappedAndRateLimited(t *testing.T) {
	log, out := testLogger(t)
	out.off = true // thousands of lines
	w := upstream.NewStderrWriter(log)
	fmt.Fprintf(w, "%s\n", strings.Repeat("y", 3*upstream.MaxStderrLine))
	for i := range 5000 {
		fmt.Fprintf(w, "flood %d\n", i)
	}
	fmt.Fprint(w, "partial line without newline")
	w.Flush()
	got := out.String()
	if !strings.Contains(got, "truncated=true") {
		t.Error("long line not marked truncated")
	}
	if strings.Contains(got, strings.Repeat("y", upstream.MaxStderrLine+1)) {
		t.Error("long line not capped")
	}
	logged := strings.Count(got, `line="flood `)
	if logged < upstream.StderrBurst/2 || logged > upstream.StderrBurst+50 {
		t.Errorf("%d flood lines logged, want about the burst of %d", logged, upstream.StderrBurst)
	}
	if !strings.Contains(got, "stderr lines dropped") {
		t.Error("dropped lines not reported")
	}
}

func TestStderrLevels(t *testing.T) {
	log, out := testLogger(t)
	w := upstream.NewStderrWriter(log)
	for _, l := range []string{"plain", "ERROR: bad", "[FATAL] worse", `{"level":"error","msg":"x"}`, "   ", "panic: oh no", "later line"} {
		fmt.Fprintf(w, "%s\r\n", l)
	}
	w.Flush()
	got := out.String()
	for _, want := range []string{
		`[WARN]  test: stderr: line=plain`,
		`[ERROR] test: stderr: line="ERROR: bad"`,
		`[ERROR] test: stderr: line="[FATAL] worse"`,
		`[ERROR] test: stderr: line="panic: oh no"`,
		`[ERROR] test: stderr: line="later line"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
	if strings.Count(got, "stderr:") != 6 {
		t.Errorf("blank line logged or a line lost:\n%s", got)
	}
}

func TestChildEnvIsAnAllowList(t *testing.T) {
	ours := map[string]string{"PATH": "/bin", "HOME": "/root", "VAULT_TOKEN": "s.secret", "AWS_SECRET_ACCESS_KEY": "x"}
	env := upstream.ChildEnv(func(k string) (string, bool) { v, ok := ours[k]; return v, ok }, map[string]string{"HOME": "/srv", "API_KEY": "k"})
	got := strings.Join(env, " ")
	if got != "PATH=/bin API_KEY=k HOME=/srv" {
		t.Errorf("child env %q", got)
	}
	if env := upstream.ChildEnv(func(string) (string, bool) { return "", false }, nil); env == nil {
		t.Error("empty env is nil, which would inherit everything")
	}
}

// BenchmarkStderrFlood feeds the stderr re-logger a flood in 57 KiB chunks,
// as a pipe read delivers it, and reports the cost per line. See #17.
func BenchmarkStderrFlood(b *testing.B) {
	w := upstream.NewStderrWriter(hclog.NewNullLogger())
	const lines = 1000
	chunk := bytes.Repeat([]byte("fixture: a line of a stderr flood, written without pause\n"), lines)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = w.Write(chunk)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
	b.ReportMetric(float64(b.N*lines)/b.Elapsed().Seconds(), "lines/s")
}
