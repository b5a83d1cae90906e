package upstream_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

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

// TestStderrLevels: a child's stderr is logged at the level the line names,
// info when it names none (a server's start-up banner is not a warning;
// issue 18), and at error after a Go panic.
func TestStderrLevels(t *testing.T) {
	log, out := testLogger(t)
	w := upstream.NewStderrWriter(log)
	for _, l := range []string{"plain", "ERROR: bad", "[FATAL] worse", `{"level":"error","msg":"x"}`, "   ", "panic: oh no", "later line"} {
		fmt.Fprintf(w, "%s\r\n", l)
	}
	w.Flush()
	got := out.String()
	for _, want := range []string{
		`[INFO]  test: stderr: line=plain`,
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

func TestLineLevel(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       hclog.Level
	}{
		{"banner", "Secure MCP Filesystem Server running on stdio", hclog.Info},
		{"prose with error later", "Knowledge Graph MCP Server running on stdio; errors go here", hclog.Info},
		{"node exception", "Error: Cannot find module 'foo'", hclog.Error},
		{"colon prefix lower case", "warning: deprecated flag", hclog.Warn},
		{"python logging", "WARNING:root:low disk", hclog.Warn},
		{"python debug", "DEBUG:mcp.server:request", hclog.Debug},
		{"hclog text", "2025-01-01T00:00:00.000Z [WARN]  plugin: slow", hclog.Warn},
		{"rust tracing", "2025-01-01T00:00:00.000000Z  INFO server: listening", hclog.Info},
		{"rust tracing debug", "2025-01-01T00:00:00.000000Z DEBUG server: frame", hclog.Debug},
		{"ansi colours", "\x1b[2m2025-01-01\x1b[0m \x1b[33m WARN\x1b[0m x", hclog.Warn},
		{"bracketed timestamp", "[11/26/25 10:00:00] ERROR    boom", hclog.Error},
		{"logfmt", `time=2025-01-01T00:00:00Z level=WARN msg="slow start"`, hclog.Warn},
		{"logfmt lower case", `level=debug msg=x`, hclog.Debug},
		{"hclog json", `{"@level":"warn","@message":"x"}`, hclog.Warn},
		{"slog json upper case", `{"time":"t","level":"ERROR","msg":"x"}`, hclog.Error},
		{"pino info", `{"level":30,"msg":"x"}`, hclog.Info},
		{"pino warn", `{"level":40,"msg":"x"}`, hclog.Warn},
		{"pino fatal", `{"level":60,"msg":"x"}`, hclog.Error},
		{"gcp severity", `{"severity":"DEBUG","message":"x"}`, hclog.Debug},
		{"json without level", `{"msg":"x"}`, hclog.Info},
		{"json unknown level", `{"level":"verbose"}`, hclog.Info},
		{"not json", `{not json ERROR`, hclog.Error},
		{"lower case word is prose", "the debug endpoint is off", hclog.Info},
		{"url first", "http://localhost:3000 ready", hclog.Info},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := upstream.LineLevel(c.line); got != c.want {
				t.Errorf("LineLevel(%q) = %s, want %s", c.line, got, c.want)
			}
		})
	}
}

// TestStderrTail: the last lines of a child's stderr are kept (for /status),
// including those rate limiting kept out of the log, cut to length and
// without terminal escapes or control characters.
func TestStderrTail(t *testing.T) {
	log, out := testLogger(t)
	out.off = true
	w, tail := upstream.NewStderrWriterTail(log)
	if got := tail(); got != nil {
		t.Fatalf("tail before any line: %q", got)
	}
	for i := range upstream.StderrBurst + 100 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	fmt.Fprintf(w, "\x1b[31mError:\x1b[0m Cannot find module 'foo'\a\n")
	fmt.Fprintf(w, "%s\n", strings.Repeat("é", upstream.StderrTailLine))
	w.Flush()
	got := tail()
	if len(got) != upstream.StderrTailLines {
		t.Fatalf("tail has %d lines, want %d: %q", len(got), upstream.StderrTailLines, got)
	}
	if want := fmt.Sprintf("line %d", upstream.StderrBurst+99); got[len(got)-3] != want {
		t.Errorf("third-last line %q, want %q (lines dropped from the log are kept)", got[len(got)-3], want)
	}
	if got[len(got)-2] != "Error: Cannot find module 'foo'" {
		t.Errorf("escapes kept: %q", got[len(got)-2])
	}
	last := got[len(got)-1]
	if len(last) > upstream.StderrTailLine+len("…") || !strings.HasSuffix(last, "…") || !utf8.ValidString(last) {
		t.Errorf("long line not cut to %d bytes of valid UTF-8: %d bytes", upstream.StderrTailLine, len(last))
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
