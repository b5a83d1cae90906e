// Command switchboard is one MCP endpoint for many MCP servers.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// serve is also what runs without a command (run).
	if len(os.Args) == 1 || os.Args[1] == "serve" {
		if err := restartForSysmon(); err != nil {
			fmt.Fprintf(os.Stderr, "switchboard: serving with the Go runtime's default monitor: restart with GODEBUG=schedtrace: %v\n", err)
		}
	}
	stampVersion()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
