// Command switchboard is one MCP endpoint for many MCP servers.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcp-switchboard/switchboard/proxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := proxy.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
