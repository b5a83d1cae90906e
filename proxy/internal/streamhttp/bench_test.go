package streamhttp

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkEncodeEvent: one tools/call answer as an SSE event, written
// directly and through the SDK's encoder.
func BenchmarkEncodeEvent(b *testing.B) {
	for _, size := range []int{100, 64 << 10} {
		result, err := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", size)}}})
		if err != nil {
			b.Fatal(err)
		}
		id, _ := jsonrpc.MakeID(float64(42))
		r := &jsonrpc.Response{ID: id, Result: result}
		b.Run(sizeName(size)+"/direct", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeEvent(r, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sizeName(size)+"/encoder", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonrpc.EncodeMessage(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
