package sanitize_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/sanitize"
)

// benchText is realistic tool output: prose, code, JSON and a little HTML.
func benchText(n int) string {
	const unit = "Issue #1234: Build fails on main after merging the parser change.\n" +
		"```go\nfunc (p *Parser) Next() (Token, error) { return p.lex.Scan() }\n```\n" +
		`{"id": 1234, "state": "open", "labels": ["bug", "p1"], "url": "https://example.com/x?a=1&b=2"}` + "\n" +
		"<p>See the <a href=\"https://example.com\">docs</a> &amp; the changelog.</p>\n"
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

func benchToolResult(b *testing.B, n int) {
	text := benchText(n)
	opt := sanitize.Options{Wrap: true, OnSuspicious: sanitize.ModeWarn, MaxResultBytes: 50 << 20}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		if _, _, err := sanitize.ToolResult(res, githubSrc, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWrap1KiB(b *testing.B) { benchToolResult(b, 1<<10) }
func BenchmarkWrap1MiB(b *testing.B) { benchToolResult(b, 1<<20) }

func BenchmarkScan1KiB(b *testing.B) {
	text := benchText(1 << 10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		sanitize.Scan(text)
	}
}
