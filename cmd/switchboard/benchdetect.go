package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	detect "github.com/mcp-switchboard/switchboard/sanitize/bench"
)

const benchDetectUsage = "bench detect [--misses] FILE..."

// cmdBenchDetect runs "switchboard bench detect": it scores injection
// detection on labelled files, one JSON sample a line (text, label
// injection or benign, family), through the paths a tool result and a
// tool description take (package sanitize/bench).
func cmdBenchDetect(args []string, stdout, stderr io.Writer) int {
	var misses bool
	fs := newFlags("bench detect", benchDetectUsage, stderr)
	fs.BoolVar(&misses, "misses", false, "also print the line and channel of every wrong verdict (never the text)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitConfig
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, `switchboard bench detect: name at least one labelled file ({"text": …, "label": "injection" or "benign", "family": …} a line)`)
		return exitConfig
	}
	var rows []detect.Row
	for _, f := range fs.Args() {
		samples, err := detect.ReadFile(f)
		if err != nil {
			fmt.Fprintln(stderr, "switchboard bench detect:", err)
			return exitConfig
		}
		res, err := detect.Score(samples)
		if err != nil {
			fmt.Fprintf(stderr, "switchboard bench detect: %s: %v\n", f, err)
			return exitError
		}
		name := filepath.Base(f)
		if misses {
			for _, m := range res.Misses {
				fmt.Fprintf(stdout, "miss: %s %s\n", name, m)
			}
		}
		rows = append(rows, detect.Row{File: name, Result: res})
	}
	if misses {
		fmt.Fprintln(stdout)
	}
	if err := detect.WriteTables(stdout, rows); err != nil {
		return exitError
	}
	return exitOK
}
