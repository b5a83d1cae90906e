package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/internal/gctune"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The benchmarks in this file run a whole proxy in the test process: the
// downstream client speaks newline-delimited JSON over in-process pipes (the
// stdio downstream), and the upstream is a real stdio child: this test
// binary, started again as a go-sdk echo server (TestMain). allocs/op counts
// the test process: client and proxy. BenchmarkDirectCall measures the
// same client and echo child with no proxy between them, so the difference
// is switchboard's.

// benchEchoEnv makes this test binary an echo server on stdio, with that
// many padding tools.
const benchEchoEnv = "SWITCHBOARD_BENCH_ECHO"

func TestMain(m *testing.M) {
	if n := os.Getenv(benchEchoEnv); n != "" {
		awaitStartGate(os.Getenv(startGateEnv))
		extra, _ := strconv.Atoi(n)
		if err := echoServer(extra).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// benchConfig is a config with one echo child with extra padding tools;
// full adds wrapping and a policy.
func benchConfig(full bool, extra int) string {
	self, _ := json.Marshal(os.Args[0])
	server := fmt.Sprintf(`{"echo": {"command": %s, "env": {%q: "%d"}}}`, self, benchEchoEnv, extra)
	if !full {
		return `{"mcpServers": ` + server + `, "sanitize": {"wrapResults": false}}`
	}
	return `{"mcpServers": ` + server + `, "sanitize": {"wrapResults": true}, "tools": {"allow": ["mcp_*"], "deny": ["mcp_*_nothing*"]}}`
}

// echoServer answers tool "echo" with its "text" argument. With extra > 0 it
// also offers tools pad-0 … pad-(extra-1); with testToolsEnv set, the tools
// of addTestTools.
func echoServer(extra int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echo text.", InputSchema: schema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
		})
	for i := range extra {
		s.AddTool(&mcp.Tool{
			Name:        "pad-" + strconv.Itoa(i),
			Description: fmt.Sprintf("Padding tool number %d, with a description of typical length for a real server.", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"An identifier."},"limit":{"type":"integer","minimum":1}},"required":["id"]}`),
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	if os.Getenv(testToolsEnv) != "" {
		addTestTools(s) // pipeline_test.go; the benchmarks never set it
	}
	if os.Getenv(failListsEnv) != "" {
		addListFaults(s) // catalog_partial_test.go
	}
	return s
}

// pipeTransports returns a connected client/server pair of stdio-framed
// transports over in-process pipes.
func pipeTransports() (client, server mcp.Transport) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	return &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.IOTransport{Reader: sr, Writer: sw}
}

// benchProxy serves config through a proxy and returns a downstream
// session once tool wantTool is listed. The downstream (down) is the proxy's stdio mode on in-process
// pipes ("stdio", with the client's default protocol, 2026-07-28;
// "stdio-2025", pinned to 2025-11-25 as most clients speak today), or its
// streamable HTTP endpoint on 127.0.0.1 ("http" and "http-2025" alike).
func benchProxy(b *testing.B, config string, wantTool, down string) *mcp.ClientSession {
	b.Helper()
	http := strings.HasPrefix(down, "http")

	dir := b.TempDir()
	path := filepath.Join(dir, "switchboard.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	o := Options{
		ConfigPath: path, Stderr: io.Discard,
		Getenv: func(string) string { return "" },
	}
	var ct mcp.Transport
	if http {
		o.Listen, o.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
		o.ReadyFile = filepath.Join(dir, "ready")
	} else {
		var st mcp.Transport
		ct, st = pipeTransports()
		sio := st.(*mcp.IOTransport)
		o.Stdio, o.Stdin, o.Stdout = true, sio.Reader, sio.Writer
	}
	p, c, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, c) }()
	if http {
		addr := waitReady(b, o.ReadyFile)
		ct = &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: benchHTTPClient}
	}

	var copts *mcp.ClientSessionOptions
	if strings.HasSuffix(down, "-2025") {
		copts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, copts)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.Error("proxy did not stop")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range res.Tools {
			if t.Name == wantTool {
				return cs
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not listed after 10 s", wantTool)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func benchCalls(b *testing.B, cs *mcp.ClientSession, tool string) {
	b.Helper()
	// As serve does: the collector target switchboard runs with.
	old := debug.SetGCPercent(100)
	ctx, cancel := context.WithCancel(context.Background())
	gctune.Tune(ctx, os.Getenv)
	b.Cleanup(func() { cancel(); debug.SetGCPercent(old) })
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			want := "msg-" + strconv.FormatInt(n.Add(1), 10)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": want}})
			if err != nil {
				b.Fatal(err)
			}
			if res.IsError || len(res.Content) == 0 {
				b.Fatalf("call failed: %+v", res)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; !containsWord(text, want) {
				b.Fatalf("result %q lacks %q", text, want)
			}
		}
	})
}

// containsWord reports whether want occurs in text followed by a non-digit
// (so msg-1 does not match msg-12).
func containsWord(text, want string) bool {
	for i := 0; i+len(want) <= len(text); i++ {
		if text[i:i+len(want)] == want && (i+len(want) == len(text) || text[i+len(want)] < '0' || text[i+len(want)] > '9') {
			return true
		}
	}
	return false
}

// BenchmarkDirectCall is the floor: the same client and echo child, no
// proxy.
func BenchmarkDirectCall(b *testing.B) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), benchEchoEnv+"=0")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	benchCalls(b, cs, "echo")
}

// BenchmarkForwardCall is one tools/call through switchboard, from a
// stdio or a streamable HTTP downstream, at the go-sdk client's default
// protocol (2026-07-28) or pinned to 2025-11-25.
func BenchmarkForwardCall(b *testing.B) {
	for _, down := range []string{"stdio", "stdio-2025", "http", "http-2025"} {
		for _, c := range []struct{ name, config string }{
			{"plain", benchConfig(false, 0)},
			{"wrap+policy", benchConfig(true, 0)},
		} {
			b.Run(down+"/"+c.name, func(b *testing.B) {
				cs := benchProxy(b, c.config, "mcp_echo_echo", down)
				benchCalls(b, cs, "mcp_echo_echo")
			})
		}
	}
}

var benchHTTPClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// waitReady returns the listen address from the proxy's ready file.
func waitReady(b *testing.B, path string) string {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil {
			if addr, _, ok := strings.Cut(string(data), "\n"); ok {
				return addr
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("no ready file after 10 s")
	return ""
}

// BenchmarkToolsList500 lists 501 tools through switchboard.
func BenchmarkToolsList500(b *testing.B) {
	cs := benchProxy(b, benchConfig(true, 500), "mcp_echo_echo", "stdio")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Tools) != 501 {
			b.Fatalf("listed %d tools, want 501", len(res.Tools))
		}
	}
}
