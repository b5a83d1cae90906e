package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy"
	"github.com/mcp-switchboard/switchboard/proxy/ranker"
	"github.com/mcp-switchboard/switchboard/proxy/ranker/bench"
)

const benchUsage = "bench search [--config FILE | --catalog DIR] [--misses] FILE..."

// benchUsages is what "switchboard bench" alone prints: both commands.
const benchUsages = benchUsage + "\n       switchboard " + benchDetectUsage

// cmdBench runs "switchboard bench search": it scores the ranker of
// switchboard_find_tools, beside plain BM25, on labelled files against a
// catalog: the config's servers' tools (started as "tools" starts them),
// or a directory of recorded tools/list results.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "detect" {
		return cmdBenchDetect(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "search" {
		fmt.Fprintf(stderr, "usage: switchboard %s\n", benchUsages)
		return exitConfig
	}
	var o proxy.Options
	var catalog string
	var wait time.Duration
	var misses bool
	fs := newFlags("bench search", benchUsage, stderr)
	fs.StringVar(&o.ConfigPath, "config", "", "config whose servers' tools are the catalog (default: the embedded demo config)")
	fs.StringVar(&catalog, "catalog", "", "directory of recorded tools/list results, <server>.json each, instead of a config's servers")
	fs.StringVar(&o.LogLevel, "log-level", "warn", "log level while the servers start")
	fs.DurationVar(&wait, "wait", 0, "how long to wait for servers to start (default: the largest server timeout)")
	fs.BoolVar(&misses, "misses", false, "also print every step the ranker missed")
	if err := fs.Parse(args[1:]); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitConfig
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "switchboard bench search: name at least one labelled file (a JSON request and the tools it needs a line)")
		return exitConfig
	}
	if catalog != "" && o.ConfigPath != "" {
		fmt.Fprintln(stderr, "switchboard bench search: --config and --catalog: give one")
		return exitConfig
	}
	files := make(map[string][]bench.Task, fs.NArg())
	for _, f := range fs.Args() {
		tasks, err := bench.ReadFile(f)
		if err != nil {
			fmt.Fprintln(stderr, "switchboard bench search:", err)
			return exitConfig
		}
		files[f] = tasks
	}
	var docs []ranker.Doc
	var err error
	if catalog != "" {
		docs, err = bench.ReadCatalogDir(catalog)
		if err != nil {
			fmt.Fprintln(stderr, "switchboard bench search:", err)
			return exitConfig
		}
	} else if docs, err = configDocs(ctx, o, wait, stderr); err != nil {
		if ctx.Err() != nil {
			return exitError
		}
		return configError(stderr, err)
	}
	known := make(map[string]bool, len(docs))
	for _, d := range docs {
		known[d.Name] = true
	}
	start := time.Now()
	ix := bench.Index{Index: ranker.New(docs), Docs: docs}
	build := time.Since(start)
	searchers := []struct {
		name string
		s    bench.Searcher
	}{{"switchboard", ix}, {"plain BM25", bench.NewBM25(docs)}}
	var rows []bench.Row
	for _, f := range fs.Args() {
		for _, s := range searchers {
			fig, err := bench.Score(s.s, files[f], func(n string) bool { return known[n] })
			if err != nil {
				fmt.Fprintf(stderr, "switchboard bench search: %s: %v\n", f, err)
				return exitConfig
			}
			rows = append(rows, bench.Row{File: filepath.Base(f), Ranker: s.name, Figures: fig})
			if misses && s.name == "switchboard" {
				for _, m := range fig.Misses {
					fmt.Fprintf(stdout, "miss: %s: %s\n", filepath.Base(f), m)
				}
			}
		}
	}
	servers := map[string]bool{}
	for _, d := range docs {
		servers[d.Server] = true
	}
	fmt.Fprintf(stdout, "catalog: %d tools of %d servers; index built in %v\n\n", len(docs), len(servers), build.Round(time.Millisecond))
	if err := bench.WriteTable(stdout, rows); err != nil {
		return exitError
	}
	return exitOK
}

// configDocs starts the servers of the config o names and returns the
// default view's tools as the ranker reads them.
func configDocs(ctx context.Context, o proxy.Options, wait time.Duration, stderr io.Writer) ([]ranker.Doc, error) {
	o.Stderr = stderr
	o.CatalogDir = proxy.DefaultCatalogDir()
	rows, _, down, err := proxy.ListTools(ctx, o, wait) // withheld tools are not searched
	if err != nil {
		return nil, err
	}
	for _, st := range down {
		fmt.Fprintf(stderr, "server %q is %s, its tools are not in the catalog: %s\n", st.Name, st.State, oneLine(st.LastError, 200))
	}
	docs := make([]ranker.Doc, 0, len(rows))
	for _, r := range rows {
		raw, err := json.Marshal(r.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %v", r.Public, err)
		}
		params, err := bench.Params(raw)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %v", r.Public, err)
		}
		docs = append(docs, ranker.Doc{Name: r.Public, Server: r.Server, Title: r.Title, Description: r.Description, Params: params})
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("the config's servers list no tools: nothing to search")
	}
	return docs, nil
}
