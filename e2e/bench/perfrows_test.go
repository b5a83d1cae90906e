package main

import (
	"strings"
	"testing"
)

// TestCountRows: a sample goes to the first row, in the table's order,
// with a frame on its stack, whatever the frame's depth (a net/http frame
// above switchboard's answer write is the answer's); a sample no row takes
// is other.
func TestCountRows(t *testing.T) {
	script := `
	  4a1 runtime.mallocgc
	  4a2 github.com/mcp-switchboard/switchboard/sanitize.ToolResult
	  4a3 github.com/mcp-switchboard/switchboard/upstream.(*Handle).CallTool
	  4a4 net/http.(*conn).serve

	  5b1 syscall.Syscall
	  5b2 github.com/mcp-switchboard/switchboard/upstream.(*lineConn).Write
	  5b3 net/http.(*conn).serve

	  6c1 runtime.scanobject
	  6c2 runtime.gcBgMarkWorker

	  7d1 [unknown]

	  8e1 runtime.memmove
	  8e2 net/http.Header.Clone
	  8e3 github.com/mcp-switchboard/switchboard/proxy/internal/streamhttp.(*stream).Write
	  8e4 net/http.(*conn).serve
`
	got, err := countRows(strings.NewReader(script), rowsFor("sb-everything"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		sbRows[0].name:              0.2, // the trust boundary
		"the upstream call":         0.2,
		"writing the answer":        0.2,
		"Go runtime: the collector": 0.2,
		"other":                     0.2,
	}
	for _, row := range got {
		if row.share != want[row.name] {
			t.Errorf("%s: %.2f, want %.2f", row.name, row.share, want[row.name])
		}
	}
	if got[len(got)-1].name != "other" {
		t.Errorf("last row %q, want other", got[len(got)-1].name)
	}
	if _, err := countRows(strings.NewReader("\n\n"), sbRows); err == nil {
		t.Error("no samples: no error")
	}
}

// TestRowsFor: each process's profile is read with its own rows, then the
// runtime's.
func TestRowsFor(t *testing.T) {
	for _, tc := range []struct {
		id    string
		first string
	}{
		{"peer-everything", peerRows[0].name},
		{"peer-http-echo", peerRows[0].name},
		{"sb-everything", sbRows[0].name},
		{"sb-stdio-echo-2026-07-28", sbRows[0].name},
	} {
		t.Run(tc.id, func(t *testing.T) {
			rows := rowsFor(tc.id)
			if rows[0].name != tc.first {
				t.Errorf("first row %q, want %q", rows[0].name, tc.first)
			}
			if last := rows[len(rows)-1].name; last != runtimeRows[len(runtimeRows)-1].name {
				t.Errorf("last row %q, want the runtime's", last)
			}
		})
	}
}
