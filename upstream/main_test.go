package upstream_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/internal/testutil"
)

// serverEnv names the helper MCP server the test binary runs instead of the
// tests when a Handle starts it as a child (the fork/exec trick). The other
// UPSTREAM_TEST_* variables add faults to it.
const serverEnv = "UPSTREAM_TEST_SERVER"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == upstream.ShimCommand {
		os.Exit(upstream.RunShim(os.Args[2:]))
	}
	if name := os.Getenv(serverEnv); name != "" {
		os.Exit(runTestServer(name))
	}
	// Stdio children start under the shim, as in the switchboard binary.
	upstream.SetShim(true)
	os.Exit(m.Run())
}

// runTestServer is the child side: a small MCP server over stdio.
//
//	UPSTREAM_TEST_PIDFILE=f       write the PID to f at start
//	UPSTREAM_TEST_STDERR=a|b|c    write these lines to stderr at start
//	UPSTREAM_TEST_EXIT=n          exit with code n before serving
//	UPSTREAM_TEST_SLOW=d          sleep d before serving (stdin unread)
//	UPSTREAM_TEST_IGNORE_TERM=1   ignore SIGTERM and stdin EOF
//	UPSTREAM_TEST_GRANDCHILD=f    start a grandchild in our process group, write its PID to f
//
// The server "sleeper" sleeps; "shimparent" runs UPSTREAM_TEST_SCRIPT with
// sh under the shim and sleeps.
func runTestServer(name string) int {
	if name == "sleeper" {
		sleepForever()
	}
	if name == "shimparent" {
		// A stand-in for switchboard that a test kills with SIGKILL.
		if _, _, err := upstream.StartShim("/bin/sh", []string{"-c", os.Getenv("UPSTREAM_TEST_SCRIPT")}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		sleepForever()
	}
	ignoreTerm := os.Getenv("UPSTREAM_TEST_IGNORE_TERM") != ""
	if ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if f := os.Getenv("UPSTREAM_TEST_PIDFILE"); f != "" {
		if err := writeFileAtomic(f, strconv.Itoa(os.Getpid())); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if lines := os.Getenv("UPSTREAM_TEST_STDERR"); lines != "" {
		for _, l := range strings.Split(lines, "|") {
			fmt.Fprintln(os.Stderr, l)
		}
	}
	if code := os.Getenv("UPSTREAM_TEST_EXIT"); code != "" {
		n, _ := strconv.Atoi(code)
		return n
	}
	if f := os.Getenv("UPSTREAM_TEST_GRANDCHILD"); f != "" {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), serverEnv+"=sleeper")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := writeFileAtomic(f, strconv.Itoa(cmd.Process.Pid)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_ = cmd.Process.Release()
	}
	if d, err := time.ParseDuration(os.Getenv("UPSTREAM_TEST_SLOW")); err == nil {
		time.Sleep(d)
	}

	s := mcp.NewServer(&mcp.Implementation{Name: name}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "crashing on request")
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "garble", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// A line longer than the connection accepts, then no answer.
			fmt.Fprintln(os.Stdout, strings.Repeat("x", 2<<20))
			sleepForever()
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "noisy", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Log lines on stdout, as some servers print them, then answer.
			fmt.Fprintln(os.Stdout, "server ready on stdio")
			fmt.Fprintln(os.Stdout, `{"level":"info","msg":"not a JSON-RPC message"}`)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "still here"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "hang", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			fmt.Fprintln(os.Stderr, "hang cancelled")
			return nil, ctx.Err()
		})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	if ignoreTerm {
		sleepForever()
	}
	return 0
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// checkGoroutines fails the test if it leaves more goroutines behind than it
// found, after a grace period for goroutines that are on their way out.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(15 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// logBuffer collects log output for assertions and mirrors it to t.Log.
type logBuffer struct {
	t   *testing.T
	mu  sync.Mutex
	buf bytes.Buffer
	off bool
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if !b.off {
		b.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLogger returns a logger whose output shows with a failing test and
// can be searched.
func testLogger(t *testing.T) (hclog.Logger, *logBuffer) {
	b := &logBuffer{t: t}
	t.Cleanup(func() {
		b.mu.Lock()
		b.off = true // late lines must not reach a finished test
		b.mu.Unlock()
	})
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: b}), b
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testutil.Eventually(t, 10*time.Second, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}
