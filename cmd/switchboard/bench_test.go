package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchSearchTable: "switchboard bench search" on the project's own
// labelled files and recorded catalogs prints the table that
// docs/discovery-figures.md shows, row for row.
func TestBenchSearchTable(t *testing.T) {
	dir := filepath.Join("..", "..", "proxy", "ranker", "testdata")
	args := []string{"bench", "search", "--catalog", filepath.Join(dir, "servers")}
	for _, f := range []string{"tasks_tune.jsonl", "tasks_heldout.jsonl", "goals_tune.jsonl", "goals_heldout.jsonl", "queries.jsonl", "queries_holdout.jsonl", "zh_tune.jsonl", "zh_heldout.jsonl"} {
		args = append(args, filepath.Join(dir, f))
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("bench search: exit %d: %s", code, stderr.String())
	}
	_, printed, ok := strings.Cut(stdout.String(), "\n\n")
	if !ok {
		t.Fatalf("no table in:\n%s", stdout.String())
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "discovery-figures.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "<!-- bench search table: TestBenchSearchTable checks it is what the command prints -->\n")
	table, _, ok = strings.Cut(table, "<!-- end of bench search table -->")
	if !ok {
		t.Fatal("docs/discovery-figures.md has no bench search table between its markers")
	}
	if strings.TrimSpace(printed) != strings.TrimSpace(table) {
		t.Errorf("bench search prints\n%s\nbut docs/discovery-figures.md shows\n%s", printed, table)
	}
}

// TestBenchSearchErrors: bad use and bad files are errors that say what
// and where.
func TestBenchSearchErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"request": "x", "tools": ["mcp_nope_x"]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	malformed := filepath.Join(dir, "malformed.jsonl")
	if err := os.WriteFile(malformed, []byte("{\"request\": \"x\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := filepath.Join("..", "..", "proxy", "ranker", "testdata", "servers")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "usage: switchboard bench search"},
		{[]string{"bench", "search", "--catalog", servers}, "name at least one labelled file"},
		{[]string{"bench", "search", "--catalog", servers, "--config", "x.json", bad}, "--config and --catalog: give one"},
		{[]string{"bench", "search", "--catalog", dir, bad}, "no <server>.json tools/list results"},
		{[]string{"bench", "search", "--catalog", servers, bad}, `tool "mcp_nope_x" is not in the catalog`},
		{[]string{"bench", "search", "--catalog", servers, malformed}, "malformed.jsonl line 1: names no tool"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr); code != exitConfig || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), exitConfig, tt.want)
		}
	}
}
