package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioClient drives a go-sdk server on ServerTransport with raw lines.
type stdioClient struct {
	t     *testing.T
	in    io.WriteCloser
	out   *bufio.Reader
	mu    sync.Mutex
	noise []string
}

func newStdioServer(t *testing.T) *stdioClient { return newStdioServerTaking(t, nil) }

// newStdioServerTaking serves with take seeing requests first.
func newStdioServerTaking(t *testing.T, take func(mcp.Connection, *jsonrpc.Request) bool) *stdioClient {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	c := &stdioClient{t: t, in: stdinW, out: bufio.NewReader(stdoutR)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(ctx, serverTransport{stdinR, stdoutW, func(line []byte, _ error) {
			c.mu.Lock()
			c.noise = append(c.noise, string(line))
			c.mu.Unlock()
		}, take})
	}()
	t.Cleanup(func() {
		stdinW.Close()
		cancel()
		<-done
		stdoutR.Close()
	})
	return c
}

func (c *stdioClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads one line and decodes it into v.
func (c *stdioClient) recv(v any) string {
	c.t.Helper()
	line, err := c.out.ReadString('\n')
	if err != nil {
		c.t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		c.t.Fatalf("%q: %v", line, err)
	}
	return line
}

type wireReply struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *stdioClient) initialize(version string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	var r wireReply
	if line := c.recv(&r); r.Error != nil || !strings.Contains(line, version) {
		c.t.Fatalf("initialize: %s", line)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestServerTransportRefusesBadLines: a line that is not JSON-RPC gets a
// JSON-RPC error with id null, is reported, and the session goes on.
func TestServerTransportRefusesBadLines(t *testing.T) {
	c := newStdioServer(t)
	c.initialize("2025-11-25")
	for _, tc := range []struct {
		line string
		code int
	}{
		{`not json at all`, -32700},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"`, -32700},
		{`{"hello":"world"}`, -32600},
		{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, -32600},
	} {
		c.send(tc.line)
		var r wireReply
		line := c.recv(&r)
		if r.Error == nil || r.Error.Code != tc.code || r.ID != nil {
			t.Errorf("%s: reply %s, want error %d with id null", tc.line, line, tc.code)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`)
	var r wireReply
	if line := c.recv(&r); r.Error != nil || r.ID != float64(9) || !strings.Contains(line, `{\"a\":1}`) {
		t.Errorf("call after the bad lines: %s", line)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.noise) != 4 || c.noise[0] != "not json at all" {
		t.Errorf("reported: %q", c.noise)
	}
}

// TestServerTransportBatches: a batch is answered with one batch, in
// order, under 2025-03-26, and refused under 2025-06-18 and later.
func TestServerTransportBatches(t *testing.T) {
	c := newStdioServer(t)
	c.initialize("2025-03-26")
	c.send(`[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"n":1}}},` +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}},` +
		`{"jsonrpc":"2.0","id":"b","method":"ping"}]`)
	var batch []wireReply
	line := c.recv(&batch)
	if len(batch) != 2 || batch[0].ID != "a" || batch[1].ID != "b" || batch[0].Error != nil || batch[1].Error != nil {
		t.Fatalf("batch reply: %s", line)
	}

	c2 := newStdioServer(t)
	c2.initialize("2025-11-25")
	c2.send(`[{"jsonrpc":"2.0","id":"a","method":"ping"}]`)
	var r wireReply
	if line := c2.recv(&r); r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "batches") {
		t.Errorf("batch under 2025-11-25: %s", line)
	}
	c2.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	var p wireReply
	if line := c2.recv(&p); p.Error != nil || p.ID != "p" {
		t.Errorf("ping after the refused batch: %s", line)
	}
}

// FuzzServerTransport: whatever a client writes, a server on
// ServerTransport does not panic, ends when stdin ends, and writes only
// whole JSON lines.
func FuzzServerTransport(f *testing.F) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`
	f.Add([]byte(init + "\n" + `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/list"}]` + "\n"))
	f.Add([]byte(init + "\nnot json\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`))
	f.Add([]byte(`[]` + "\n" + `[1,2]` + "\n" + `{"jsonrpc":"2.0","id":{},"method":"ping"}`))
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	f.Fuzz(func(t *testing.T, in []byte) {
		stdoutR, stdoutW := io.Pipe()
		lines := make(chan error, 1)
		go func() {
			br := bufio.NewReader(stdoutR)
			for {
				line, err := br.ReadBytes('\n')
				if err != nil {
					lines <- nil
					return
				}
				if !json.Valid(line) {
					lines <- fmt.Errorf("not a JSON line: %q", line)
					io.Copy(io.Discard, br)
					return
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Run(ctx, ServerTransport(bytes.NewReader(in), stdoutW, hclog.NewNullLogger(), nil))
		stdoutW.Close()
		if ctx.Err() != nil {
			t.Fatalf("the session did not end with its input: %v", err)
		}
		if err := <-lines; err != nil {
			t.Fatal(err)
		}
	})
}

// TestServerTransportTake: a request take takes never reaches the server;
// take answers it on the connection, in a batch too.
func TestServerTransportTake(t *testing.T) {
	take := func(conn mcp.Connection, req *jsonrpc.Request) bool {
		if req.Method != "tools/call" || !strings.Contains(string(req.Params), `"taken"`) {
			return false
		}
		go func() {
			_ = conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"content":[{"type":"text","text":"by take"}]}`)})
		}()
		return true
	}
	c := newStdioServerTaking(t, take)
	c.initialize("2025-03-26")
	// The server has no tool "taken": only take can answer it.
	c.send(`{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"taken"}}`)
	var r wireReply
	if line := c.recv(&r); r.ID != "t" || !strings.Contains(line, "by take") {
		t.Fatalf("taken call: %s", line)
	}
	c.send(`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"taken"}},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}]`)
	var batch []wireReply
	line := c.recv(&batch)
	if len(batch) != 2 || batch[0].ID != float64(2) || batch[1].ID != float64(3) || !strings.Contains(line, "by take") || batch[1].Error != nil {
		t.Fatalf("batch with a taken call: %s", line)
	}
}
