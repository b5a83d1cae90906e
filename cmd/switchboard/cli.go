package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy"
	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// Exit codes of the CLI.
const (
	exitOK     = 0
	exitError  = 1
	exitConfig = 2
)

const usage = `switchboard: one MCP endpoint for many MCP servers.

Usage:
  switchboard serve [--config FILE] [--listen ADDR] [--stdio] ...   run the proxy
  switchboard validate --config FILE                                 check a config
  switchboard tools [--config FILE]                                  start every server, print the tool table
  switchboard status [--admin ADDR | --config FILE] [--json]         show a running proxy's servers
  switchboard restart [--admin ADDR | --config FILE] SERVER          restart one server of a running proxy
  switchboard pins list|approve --config FILE [--server S] [--tool T] review changed tool definitions
  switchboard bench search [--config FILE | --catalog DIR] FILE...   score find_tools' ranker on labelled requests
  switchboard bench detect [--misses] FILE...                        score injection detection on labelled texts
  switchboard auth login|status|logout [NAME] [--config FILE]        OAuth consent and tokens of remote servers
  switchboard demo-server NAME                                       serve a demo MCP server on stdio
  switchboard version                                                print the version

Run "switchboard COMMAND --help" for a command's flags. With no --config, serve
and tools use the embedded default config (two demo servers).
`

// run runs the CLI and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(ctx, rest, stdin, stdout, stderr)
	case "validate":
		return cmdValidate(rest, stdout, stderr)
	case "tools":
		return cmdTools(ctx, rest, stdout, stderr)
	case "status":
		return cmdStatus(ctx, rest, stdout, stderr)
	case "restart":
		return cmdRestart(ctx, rest, stdout, stderr)
	case "pins":
		return cmdPins(rest, stdout, stderr)
	case "bench":
		return cmdBench(ctx, rest, stdout, stderr)
	case "auth":
		return cmdAuth(ctx, rest, stdout, stderr)
	case "demo-server":
		if len(rest) != 1 || strings.HasPrefix(rest[0], "-") {
			fmt.Fprintf(stderr, "usage: switchboard demo-server NAME (one of %s)\n", strings.Join(proxy.DemoServers, ", "))
			return exitConfig
		}
		if err := proxy.RunDemoServer(ctx, rest[0]); err != nil && ctx.Err() == nil {
			fmt.Fprintln(stderr, "switchboard demo-server:", err)
			return exitError
		}
		return exitOK
	case upstream.ShimCommand: // hidden: one stdio server under a shim
		return upstream.RunShim(rest)
	case "version", "--version", "-v":
		info, _ := debug.ReadBuildInfo()
		fmt.Fprintln(stdout, versionLine(proxy.Version, info))
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if strings.HasPrefix(cmd, "-") {
		// Flags without a command mean serve.
		return cmdServe(ctx, args, stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "switchboard: unknown command %q\n\n%s", cmd, usage)
	return exitConfig
}

func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: switchboard %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags returns the exit code to use when parsing stops the command.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitConfig, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitConfig, false
	}
	return 0, true
}

func configError(stderr io.Writer, err error) int {
	var ce *proxy.ConfigError
	if errors.As(err, &ce) {
		fmt.Fprintln(stderr, "switchboard: invalid config:")
		for _, line := range strings.Split(ce.Error(), "\n") {
			fmt.Fprintln(stderr, "  "+line)
		}
		return exitConfig
	}
	fmt.Fprintln(stderr, "switchboard:", err)
	return exitError
}

func cmdServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o proxy.Options
	fs := newFlags("serve", "serve [flags]", stderr)
	fs.StringVar(&o.ConfigPath, "config", "", "config file, JSON, YAML or TOML, or another MCP client's (default: the embedded demo config)")
	fs.StringVar(&o.Listen, "listen", "", "downstream MCP address host:port (default "+config.DefaultListen+"; env SWITCHBOARD_LISTEN)")
	fs.StringVar(&o.AdminListen, "admin-listen", "", "admin address for /healthz, /readyz, /status (default "+config.DefaultAdminListen+")")
	fs.BoolVar(&o.Stdio, "stdio", false, "serve one MCP client over stdin/stdout instead of HTTP (logs go to stderr)")
	fs.StringVar(&o.LogLevel, "log-level", "", "trace, debug, info, warn or error (default info; env SWITCHBOARD_LOG_LEVEL)")
	fs.StringVar(&o.LogFormat, "log-format", "", "text or json (default text; env SWITCHBOARD_LOG_FORMAT)")
	fs.StringVar(&o.Replica, "replica", "", "this replica's name in session IDs, a DNS label (default $SWITCHBOARD_REPLICA, else the host name)")
	fs.StringVar(&o.ReadyFile, "ready-file", "", "write the bound listen and admin addresses to this file once serving")
	fs.BoolVar(&o.AdminPprof, "admin-pprof", false, "serve Go's runtime profiles (CPU, heap, goroutines) under /debug/pprof/ on the admin address, for go tool pprof; the admin token, if set, is required")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	o.Stdin, o.Stdout, o.Stderr = stdin, stdout, stderr
	o.CatalogDir = proxy.DefaultCatalogDir()
	proxy.TuneRuntime(ctx, os.Getenv)
	if err := proxy.Run(ctx, o); err != nil {
		return configError(stderr, err)
	}
	return exitOK
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	var path string
	fs := newFlags("validate", "validate --config FILE", stderr)
	fs.StringVar(&path, "config", "", "config file to check (required)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if path == "" {
		fmt.Fprintln(stderr, "switchboard validate: --config is required")
		fs.Usage()
		return exitConfig
	}
	c, err := proxy.LoadConfig(proxy.Options{ConfigPath: path})
	if err != nil {
		return configError(stderr, err)
	}
	if line := c.Notes.IgnoredLine(); line != "" {
		fmt.Fprintln(stderr, "note: ignored keys of", line)
	}
	for _, n := range c.Notes.Info {
		fmt.Fprintln(stderr, "note:", n)
	}
	for _, w := range c.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if pins := proxy.PinFilePath(c); pins != "" {
		// serve reads it at start and refuses a corrupt one.
		note, err := proxy.CheckPinFile(pins)
		if err != nil {
			fmt.Fprintln(stderr, "switchboard validate:", err)
			return exitConfig
		}
		if note != "" {
			fmt.Fprintln(stderr, "warning:", note)
		}
	}
	fmt.Fprintf(stdout, "%s: ok (%d servers, digest %s)\n", path, len(c.ServerNames()), c.Digest())
	return exitOK
}

func cmdTools(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o proxy.Options
	var wait time.Duration
	fs := newFlags("tools", "tools [--config FILE]", stderr)
	fs.StringVar(&o.ConfigPath, "config", "", "config file (default: the embedded demo config)")
	fs.StringVar(&o.LogLevel, "log-level", "warn", "log level while the servers start")
	fs.DurationVar(&wait, "wait", 0, "how long to wait for servers to start (default: the largest server timeout)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	o.Stderr = stderr
	o.CatalogDir = proxy.DefaultCatalogDir()
	rows, findings, down, err := proxy.ListTools(ctx, o, wait)
	if err != nil {
		if ctx.Err() != nil {
			return exitError
		}
		return configError(stderr, err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tORIGINAL\tDESCRIPTION")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Public, r.Server, r.Original, oneLine(r.Description, 80))
	}
	tw.Flush()
	// A tool withheld or skipped is named with the reason (issue 37): the
	// table alone would lack it silently.
	if n := printFindings(stderr, findings); n > 0 {
		fmt.Fprintf(stderr, "switchboard tools: %d definition(s) withheld or skipped, not in the table\n", n)
	}
	// A server that did not come up is an error: its tools are missing
	// from the table. See issue 18.
	var names []string
	for _, st := range down {
		names = append(names, st.Name)
		fmt.Fprintf(stderr, "server %q is %s: %s\n", st.Name, st.State, oneLine(st.LastError, 200))
		for _, l := range st.StderrTail {
			fmt.Fprintln(stderr, "  "+l)
		}
	}
	if len(down) > 0 {
		fmt.Fprintf(stderr, "switchboard tools: %d server(s) not up, their tools are missing: %s\n", len(down), strings.Join(names, ", "))
		return exitError
	}
	return exitOK
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func cmdPins(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "list" && args[0] != "approve") {
		fmt.Fprintln(stderr, "usage: switchboard pins list|approve (--config FILE | --pin-file FILE) [--server S] [--tool T]")
		return exitConfig
	}
	var cfgPath, pinPath, server, tool string
	fs := newFlags("pins", args[0]+" (--config FILE | --pin-file FILE) [--server S] [--tool T]", stderr)
	fs.StringVar(&cfgPath, "config", "", "config whose sanitize.pinFile to use")
	fs.StringVar(&pinPath, "pin-file", "", "pin file to use")
	fs.StringVar(&server, "server", "", "approve only this server's tools")
	fs.StringVar(&tool, "tool", "", "approve only this tool (original name)")
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	if pinPath == "" && cfgPath != "" {
		c, err := proxy.LoadConfig(proxy.Options{ConfigPath: cfgPath})
		if err != nil {
			return configError(stderr, err)
		}
		pinPath = proxy.PinFilePath(c)
	}
	if pinPath == "" {
		fmt.Fprintln(stderr, "switchboard pins: no pin file (set sanitize.pinFile in the config, or pass --pin-file)")
		return exitConfig
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	err := proxy.RunPins(pinPath, args[0], server, tool, func(line string) { fmt.Fprintln(tw, line) })
	tw.Flush()
	if err != nil {
		fmt.Fprintln(stderr, "switchboard pins:", err)
		return exitError
	}
	return exitOK
}
