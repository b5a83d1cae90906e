package sanitize_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-switchboard/switchboard/sanitize/bench"
)

// TestDetectionDocRows: the home-made corpus's rows of the table in
// docs/security.md that stands it beside the public set are what
// `switchboard bench detect` measures on it, on all three channels.
func TestDetectionDocRows(t *testing.T) {
	var samples []bench.Sample
	for i, s := range loadDetectCorpus(t) {
		label := bench.LabelBenign
		if s.inject {
			label = bench.LabelInjection
		}
		samples = append(samples, bench.Sample{Text: s.text, Label: label, Family: s.family, Line: i + 1})
	}
	r, err := bench.Score(samples)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := bench.WriteTables(&b, []bench.Row{{File: "home-made corpus", Result: r}}); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "| home-made corpus | ") || strings.Count(line, "|") != 9 {
			continue // a row of the family table: fewer columns
		}
		rows++
		if !strings.Contains(string(doc), line+"\n") {
			t.Errorf("docs/security.md lacks the row\n%s", line)
		}
	}
	if rows != 3 {
		t.Fatalf("bench.WriteTables printed %d channel rows, want 3:\n%s", rows, b.String())
	}
}
