package proxy

import (
	"context"
	_ "embed"
	"fmt"
	"os"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/internal/demo"
)

// defaultConfig is used when no --config is given: two demo servers that
// this binary serves itself over stdio, so a first run shows aggregation.
//
//go:embed default.json
var defaultConfig []byte

// useSelfForDemo points the embedded config's "switchboard" commands at the
// running binary.
func useSelfForDemo(c *config.Config) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("embedded config: find own binary: %w", err)
	}
	for _, s := range c.MCPServers {
		if s.Command == "switchboard" {
			s.Command = self
		}
	}
	return nil
}

// DemoServers names the demo servers `switchboard demo-server` can run.
var DemoServers = demo.Servers

// RunDemoServer serves one demo MCP server over stdin/stdout.
func RunDemoServer(ctx context.Context, name string) error { return demo.Run(ctx, name, Version) }
