// Command peer is the benchmark's stand-in for TBXark/mcp-proxy: a bare MCP
// forwarder built on github.com/mark3labs/mcp-go, the library that proxy is
// built on, doing per call what that proxy does and nothing more.
//
// It runs one mcp-go client against one upstream (a stdio command, or a
// streamable HTTP URL), initialises it, lists the upstream's tools once at
// start and registers each of them, unchanged and under its own name, on one
// mcp-go MCPServer served as stateless streamable HTTP at /mcp. A tools/call
// is handed to the client's CallTool and its result returned as it came: no
// wrapping, no policy, no session bookkeeping of its own, no reconnects.
//
// Usage:
//
//	peer --listen 127.0.0.1:0 --ready-file FILE [--protocol VERSION] (--url URL | -- COMMAND [ARG...])
//
// --protocol is the version the client asks the upstream for; by default
// the newest mcp-go knows (2026-07-28), as TBXark/mcp-proxy asks. mcp-go
// v1.2.1 then takes 2026-07-28 from a go-sdk v1.8.0 streamable HTTP server's
// server/discover, whose stateful handler refuses every 2026-07-28 request
// afterwards, so the benchmark asks for 2025-11-25, the version switchboard
// negotiates with the same upstreams.
//
// Once it serves, it writes the bound address to the ready file, followed by
// a second line "protocol VERSION" with the version negotiated upstream.
//
// It is its own module, so that mcp-go never becomes a dependency of
// switchboard; the benchmark builds it with GOWORK=off in this directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "`address` to serve streamable HTTP on (/mcp)")
	ready := fs.String("ready-file", "", "`file` to write the bound address to once serving")
	url := fs.String("url", "", "streamable HTTP `URL` of the upstream (instead of a command)")
	version := fs.String("protocol", mcp.LATEST_PROTOCOL_VERSION, "protocol `version` to ask the upstream for")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if (*url == "") == (fs.NArg() == 0) {
		return errors.New("give either --url or a command after the flags")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	up, err := dial(ctx, *url, *version, fs.Args())
	if err != nil {
		return err
	}
	defer up.Close()

	srv := server.NewMCPServer("peer", "1", server.WithRecovery())
	if err := register(ctx, up, srv); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(srv, server.WithStateLess(true)))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	if *ready != "" {
		line := ln.Addr().String() + "\nprotocol " + up.ProtocolVersion() + "\n"
		if err := os.WriteFile(*ready, []byte(line), 0o644); err != nil {
			return fmt.Errorf("ready file: %w", err)
		}
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// dial starts the upstream client, over stdio when args names a command and
// over streamable HTTP otherwise, and initialises it asking for version.
func dial(ctx context.Context, url, version string, args []string) (*client.Client, error) {
	var (
		c   *client.Client
		err error
	)
	if url != "" {
		if c, err = client.NewStreamableHttpClient(url); err == nil {
			err = c.Start(ctx)
		}
	} else {
		// The stdio client starts the command at once; its environment is
		// the peer's own.
		c, err = client.NewStdioMCPClient(args[0], nil, args[1:]...)
	}
	if err != nil {
		return nil, fmt.Errorf("upstream: start: %w", err)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcp.Implementation{Name: "peer", Version: "1"}
	if _, err := c.Initialize(ictx, req); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("upstream: initialize: %w", err)
	}
	return c, nil
}

// register lists the upstream's tools, every page, and adds each to srv
// with a handler that forwards the call to up.
func register(ctx context.Context, up *client.Client, srv *server.MCPServer) error {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := up.ListTools(lctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("upstream: tools/list: %w", err)
	}
	if len(res.Tools) == 0 {
		return errors.New("upstream: tools/list: no tools")
	}
	for _, t := range res.Tools {
		srv.AddTool(t, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, req)
		})
	}
	return nil
}
