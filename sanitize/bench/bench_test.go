package bench_test

import (
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/sanitize/bench"
)

// TestScoreTiny scores testdata/tiny.jsonl through the real paths: two of
// its four injections are flagged and withheld on every channel (an
// override, a chat template), two are not (a task with no marker, a
// password put into a search query); one of three benign texts (a code
// comment that reads like an override) is flagged weakly and passes
// block mode.
func TestScoreTiny(t *testing.T) {
	samples, err := bench.ReadFile("testdata/tiny.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 7 || samples[0].Line != 2 || samples[3].Line != 6 {
		t.Fatalf("read %d samples, lines %d and %d; want 7, lines 2 and 6 (comment and blank lines skipped)", len(samples), samples[0].Line, samples[3].Line)
	}
	r, err := bench.Score(samples)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := bench.WriteTables(&b, []bench.Row{{File: "tiny.jsonl", Result: r}}); err != nil {
		t.Fatal(err)
	}
	want := `| file | channel | injections flagged | benign flagged | recall | false positives | injections withheld in block mode | benign withheld in block mode |
|---|---|---:|---:|---:|---:|---:|---:|
| tiny.jsonl | text | 2 / 4 | 1 / 3 | 50.0 % | 33.3 % | 2 / 4 | 0 / 3 |
| tiny.jsonl | structuredContent | 2 / 4 | 1 / 3 | 50.0 % | 33.3 % | 2 / 4 | 0 / 3 |
| tiny.jsonl | tool description | 2 / 4 | 1 / 3 | 50.0 % | 33.3 % | 2 / 4 | 0 / 3 |

| file | label | family | samples | flagged (text) | flagged (structuredContent) | flagged (tool description) |
|---|---|---|---:|---:|---:|---:|
| tiny.jsonl | injection | (none) | 1 | 0 | 0 | 0 |
| tiny.jsonl | injection | override | 1 | 1 | 1 | 1 |
| tiny.jsonl | injection | task | 1 | 0 | 0 | 0 |
| tiny.jsonl | injection | template | 1 | 1 | 1 | 1 |
| tiny.jsonl | benign | code | 1 | 1 | 1 | 1 |
| tiny.jsonl | benign | email | 1 | 0 | 0 | 0 |
| tiny.jsonl | benign | tooldoc | 1 | 0 | 0 | 0 |
`
	if b.String() != want {
		t.Errorf("tables:\n%s\nwant:\n%s", b.String(), want)
	}
	lines := map[int]bool{}
	for _, m := range r.Misses {
		lines[m.Line] = true
	}
	if len(r.Misses) != 9 || !lines[4] || !lines[7] || !lines[9] {
		t.Errorf("misses %v: want every channel of lines 4, 7 and 9", r.Misses)
	}
}

// TestReadErrors: a line that is not a sample is refused with the file,
// the line and what is wrong.
func TestReadErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"text": "x", "label": "benign"}` + "\n" + `{"text": "y", "label": "malicious"}`, `set.jsonl line 2: label "malicious": want "injection" or "benign"`},
		{`{"text": "  ", "label": "benign"}`, "set.jsonl line 1: no text"},
		{`{"label": "injection"}`, "set.jsonl line 1: no text"},
		{`{"text": "x", "label": "benign"`, "set.jsonl line 1: not a JSON object"},
		{`["x", "benign"]`, "set.jsonl line 1: not a JSON object"},
		{"# only a comment\n\n", "set.jsonl: no sample"},
		{`{"text": "x", "label": "Injection"}`, `label "Injection"`},
	}
	for _, c := range cases {
		_, err := bench.Read(strings.NewReader(c.in), "set.jsonl")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%q) = %v; want an error containing %q", c.in, err, c.want)
		}
	}
	if _, err := bench.ReadFile("testdata/absent.jsonl"); err == nil {
		t.Error("ReadFile of a missing file: no error")
	}
}

// FuzzRead: Read never panics, and every sample it returns has a label
// of the two and a text that is not blank.
func FuzzRead(f *testing.F) {
	f.Add(`{"text": "a", "label": "injection", "family": "x"}` + "\n# c\n" + `{"text": "b", "label": "benign"}`)
	f.Add(`{"text": "", "label": "benign"}`)
	f.Add("\n\n\t\n")
	f.Fuzz(func(t *testing.T, in string) {
		samples, err := bench.Read(strings.NewReader(in), "fuzz")
		if err != nil {
			if samples != nil {
				t.Fatalf("error %v with %d samples", err, len(samples))
			}
			return
		}
		if len(samples) == 0 {
			t.Fatal("no error and no sample")
		}
		for _, s := range samples {
			if s.Label != bench.LabelInjection && s.Label != bench.LabelBenign || strings.TrimSpace(s.Text) == "" || s.Line < 1 {
				t.Fatalf("sample %+v", s)
			}
		}
	})
}
