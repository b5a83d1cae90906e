package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchDetect: "switchboard bench detect --misses" on the scorer's
// tiny labelled set prints each wrong verdict by line and channel, then
// the tables, one row per channel.
func TestBenchDetect(t *testing.T) {
	tiny := filepath.Join("..", "..", "sanitize", "bench", "testdata", "tiny.jsonl")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"bench", "detect", "--misses", tiny}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("bench detect: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"miss: tiny.jsonl line 4: text: injection not flagged\n",
		"miss: tiny.jsonl line 7: tool description: benign sample flagged\n",
		"| tiny.jsonl | text | 2 / 4 | 1 / 3 | 50.0 % | 33.3 % | 2 / 4 | 0 / 3 |\n",
		"| tiny.jsonl | tool description | 2 / 4 | 1 / 3 | 50.0 % | 33.3 % | 2 / 4 | 0 / 3 |\n",
		"| tiny.jsonl | benign | code | 1 | 1 | 1 | 1 |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "miss: "); n != 9 {
		t.Errorf("%d misses printed, want 9", n)
	}
	if strings.Contains(out, "Ignore") || strings.Contains(out, "invoice") {
		t.Errorf("output quotes a sample:\n%s", out)
	}
}

// TestBenchDetectErrors: bad use and bad files are errors that say what
// and where.
func TestBenchDetectErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"text": "x", "label": "benign"}`+"\n"+`{"text": "y", "label": "spam"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "switchboard bench detect [--misses] FILE..."},
		{[]string{"bench", "detect"}, "name at least one labelled file"},
		{[]string{"bench", "detect", bad}, `bad.jsonl line 2: label "spam": want "injection" or "benign"`},
		{[]string{"bench", "detect", filepath.Join(dir, "absent.jsonl")}, "absent.jsonl"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr); code != exitConfig || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), exitConfig, tt.want)
		}
	}
}
