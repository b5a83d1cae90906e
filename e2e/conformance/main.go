// Command conformance is the MCP server that the official conformance suite
// (@modelcontextprotocol/conformance, "server" mode) expects to find behind
// the URL it tests: the test_* tools, the test:// resources and template,
// the test_* prompts, completion, logging, resource subscriptions and
// progress.
//
// It serves one session on stdin/stdout (the default), or streamable HTTP
// at /mcp:
//
//	conformance --transport http --listen 127.0.0.1:0 --ready-file F
//
// writes http://127.0.0.1:PORT/mcp to F once the listener accepts
// connections. The HTTP endpoint is stateful (sessions, server-to-client
// requests, resumable streams) unless --stateless is given.
//
// The sampling and elicitation tools send sampling/createMessage and
// elicitation/create to the client, as the scenarios require, on a session
// of protocol 2025-11-25 or older. Protocol 2026-07-28 forbids
// server-to-client requests during a call: a request of that protocol
// gets the same question in an input_required result, and the retry with
// the answer completes the call (SEP-2322).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverName is reported as serverInfo.name in the initialize result.
const serverName = "switchboard-conformance-fixture"

type config struct {
	transport string
	listen    string
	readyFile string
	stateless bool
	jsonResp  bool
	sdkLog    bool
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.StringVar(&c.transport, "transport", "stdio", "stdio or http (streamable HTTP at /mcp)")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:0", "listen `address` for --transport http")
	fs.StringVar(&c.readyFile, "ready-file", "", "write the endpoint URL (or \"stdio\") to this `file` once serving")
	fs.BoolVar(&c.stateless, "stateless", false, "http: serve statelessly (no sessions; needed for protocol 2026-07-28, breaks sampling and elicitation)")
	fs.BoolVar(&c.jsonResp, "json-response", false, "http: answer POSTs with one application/json body instead of an SSE stream (notifications and requests made during a call then use the GET stream)")
	fs.BoolVar(&c.sdkLog, "sdk-log", false, "send the SDK's debug log to stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch c.transport {
	case "stdio", "http":
	default:
		return nil, fmt.Errorf("--transport: want stdio or http, got %q", c.transport)
	}
	return c, nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		logf("%v", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv := newServer(cfg.sdkLogger())
	if cfg.transport == "stdio" {
		return serveStdio(ctx, cfg, srv)
	}
	return serveHTTP(ctx, cfg, srv)
}

// newServer builds the server with every feature the conformance scenarios
// exercise.
func newServer(logger *slog.Logger) *mcp.Server {
	subs := newSubscriptions()
	srv := mcp.NewServer(&mcp.Implementation{Name: serverName, Version: "1.0.0"}, &mcp.ServerOptions{
		Logger: logger,
		// Logging is the SDK's default capability; it is listed here
		// so that setting Capabilities does not drop it.
		Capabilities: &mcp.ServerCapabilities{
			Logging:    &mcp.LoggingCapabilities{},
			Extensions: map[string]any{tasksExtension: map[string]any{}},
		},
		CompletionHandler:  complete,
		SubscribeHandler:   subs.subscribe,
		UnsubscribeHandler: subs.unsubscribe,
	})
	subs.srv = srv
	addTools(srv)
	addTaskTools(srv)
	addResources(srv)
	addPrompts(srv)
	return srv
}

// serveStdio serves one session until stdin reaches EOF or a signal arrives.
func serveStdio(ctx context.Context, cfg *config, srv *mcp.Server) int {
	if cfg.readyFile != "" {
		if err := writeFileAtomic(cfg.readyFile, "stdio"); err != nil {
			logf("writing ready file: %v", err)
			return 1
		}
	}
	err := srv.Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil {
		return 0
	}
	if err != nil && !errors.Is(err, io.EOF) {
		logf("session ended: %v", err)
	}
	return 0
}

// serveHTTP serves streamable HTTP at /mcp until a signal arrives.
func serveHTTP(ctx context.Context, cfg *config, srv *mcp.Server) int {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		logf("%v", err)
		return 1
	}
	opts := &mcp.StreamableHTTPOptions{
		Stateless:    cfg.stateless,
		JSONResponse: cfg.jsonResp,
		Logger:       cfg.sdkLogger(),
	}
	if !cfg.stateless {
		// Resumable streams: priming events, and replay after
		// test_reconnection closes its stream (SEP-1699).
		opts.EventStore = mcp.NewMemoryEventStore(nil)
	}
	// The handler rejects a non-loopback Host header on a loopback
	// connection with 403 (DNS rebinding protection) by default.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", checkTaskName(h))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	url := "http://" + ln.Addr().String() + "/mcp"
	if cfg.readyFile != "" {
		if err := writeFileAtomic(cfg.readyFile, url); err != nil {
			logf("writing ready file: %v", err)
			hs.Close()
			return 1
		}
	}
	logf("serving streamable HTTP on %s", url)

	select {
	case err := <-served:
		logf("http server: %v", err)
		return 1
	case <-ctx.Done():
	}
	// Open SSE streams never become idle; give them a moment, then close.
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	return 0
}

func (c *config) sdkLogger() *slog.Logger {
	if !c.sdkLog {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// logf writes one line to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "conformance: "+format+"\n", args...)
}

// writeFileAtomic writes content through a temporary file and a rename, so a
// reader polling for path never sees it half written.
func writeFileAtomic(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
