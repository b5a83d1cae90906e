package upstream

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStreamableCall is one tools/call to a go-sdk server over
// streamable HTTP through the client, one at a time: what a call costs
// from Write to the caller holding its answer.
func BenchmarkStreamableCall(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	s := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	b.Cleanup(func() { s.Close() })
	tr := &http.Transport{}
	b.Cleanup(tr.CloseIdleConnections)
	conn, err := (&streamableTransport{URL: "http://" + ln.Addr().String(), Client: &http.Client{Transport: tr}}).Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	c := newClient(conn, clientHooks{}, hclog.NewNullLogger())
	b.Cleanup(func() { c.close() })
	ctx := context.Background()
	if err := c.initialize(ctx, "2025-11-25", &mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientCapabilities{}); err != nil {
		b.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.call(ctx, "tools/call", params, nil); err != nil {
			b.Fatal(err)
		}
	}
}
