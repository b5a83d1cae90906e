package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-switchboard/switchboard/proxy/internal/pin"
	"github.com/mcp-switchboard/switchboard/proxy/internal/testutil"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startGateEnv makes the echo child wait, before it serves, until the file
// it names exists: a server that is still starting for as long as a test
// wants. While it waits, the file named with ".waiting" added exists.
const startGateEnv = "SWITCHBOARD_TEST_START_GATE"

func awaitStartGate(path string) {
	if path == "" {
		return
	}
	_ = os.WriteFile(path+".waiting", nil, 0o600)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
}

// waitCallInProxy waits until a tools/call has reached the dispatcher's
// tools/call handler. With the server held at its start gate the call
// cannot be answered, so it waits there for the start (for its tool to be
// listed, or for its server's session): the gate may open. Nothing the
// proxy reports counts such a call (Status.InFlight counts a call once it
// has a session), so the test looks for it on the goroutines' stacks.
func waitCallInProxy(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, "the call to reach the proxy's tools/call handler", func() bool {
		buf := make([]byte, 1<<20)
		for {
			n := runtime.Stack(buf, true)
			if n < len(buf) {
				return bytes.Contains(buf[:n], []byte("/proxy/dispatch.(*Dispatcher).callTool("))
			}
			buf = make([]byte, 2*len(buf))
		}
	})
}

func openGate(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCatalogCacheFirstList: a second run answers the first list from the
// catalog the first run kept, while the server is still starting; a call
// to a cached tool waits for the start and answers; the server's own
// listing, the same, announces no change.
func TestCatalogCacheFirstList(t *testing.T) {
	cache := t.TempDir()
	gate := filepath.Join(t.TempDir(), "gate")
	config := pipelineConfig(nil, map[string]any{startGateEnv: gate}, map[string]any{"catalogCache": cache})
	openGate(t, gate)
	t.Run("first run keeps the catalog", func(t *testing.T) {
		tp := startProxy(t, config, "stdio")
		cs := tp.connect(t, nil, nil)
		waitTool(t, cs, "mcp_echo_echo")
	})
	files, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache holds %d files, want 1", len(files))
	}
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}

	var changes atomic.Int32
	tp := startProxy(t, config, "stdio")
	cs := tp.connect(t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changes.Add(1) }}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range res.Tools {
		names[tool.Name] = true
	}
	if !names["mcp_echo_echo"] || !names["mcp_echo_sleep"] {
		t.Fatalf("first list while the server starts: %v, want the cached tools", names)
	}
	if _, err := os.Stat(gate); err == nil {
		t.Fatal("the gate is open: the list may have waited for the start")
	}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		r, err := call(cs, "mcp_echo_echo", map[string]any{"text": "after the start"})
		got <- answer{r, err}
	}()
	waitCallInProxy(t)
	openGate(t, gate)
	a := <-got
	if a.err != nil || a.res.IsError {
		t.Fatalf("call to a cached tool during the start: %v %+v", a.err, a.res)
	}
	if text := resultText(t, a.res); !strings.Contains(text, "after the start") {
		t.Fatalf("call answered %q", text)
	}
	// Round trips after the server's own listing: a notification sent for
	// it would come first on this stream.
	for range 3 {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := changes.Load(); n != 0 {
		t.Errorf("%d tools/list_changed for a catalog equal to the cached one", n)
	}
}

// TestCallBeforeFirstList: with no cache, a call sent before any list, to
// a server on its first start, waits for the start; a lazy server starts
// on a call by name; a name no server can provide is refused at once.
func TestCallBeforeFirstList(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server map[string]any
	}{
		{"eager", nil},
		{"lazy", map[string]any{"lazy": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "gate")
			config := pipelineConfig(tc.server, map[string]any{startGateEnv: gate}, map[string]any{"catalogCache": "off"})
			tp := startProxy(t, config, "stdio")
			cs := tp.connect(t, nil, nil)
			got := make(chan error, 1)
			go func() {
				res, err := call(cs, "mcp_echo_echo", map[string]any{"text": "early"})
				if err == nil && (res.IsError || !strings.Contains(resultText(t, res), "early")) {
					err = &json.UnsupportedValueError{Str: "result " + resultText(t, res)}
				}
				got <- err
			}()
			waitCallInProxy(t)
			openGate(t, gate)
			if err := <-got; err != nil {
				t.Fatalf("call before the first list: %v", err)
			}
			_, err := call(cs, "mcp_other_echo", map[string]any{"text": "x"})
			if e := rpcError(t, err); e.Code != -32602 {
				t.Fatalf("unknown tool: %v", err)
			}
		})
	}
}

// TestCatalogCacheStoresWhatWouldBeServed: known secrets are redacted in
// the file, and in pin mode block a definition that differs from its pin
// is not kept.
func TestCatalogCacheStoresWhatWouldBeServed(t *testing.T) {
	set := secrets.NewSet()
	set.Add("hunter2-secret-value")
	f := catalogFile{Version: catalogFileVersion, Server: "s", Tools: []*mcp.Tool{{
		Name: "t", Description: "uses hunter2-secret-value", InputSchema: map[string]any{"type": "object",
			"properties": map[string]any{"hunter2-secret-value": map[string]any{"type": "string"}}},
	}}}
	b, err := redactedJSON(&f, set)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") {
		t.Fatalf("secret in the cached catalog: %s", b)
	}
	var back catalogFile
	if err := json.Unmarshal(b, &back); err != nil || len(back.Tools) != 1 {
		t.Fatalf("cached catalog does not read back: %v %s", err, b)
	}

	ps := pin.NewStore(hclog.NewNullLogger())
	tool := &mcp.Tool{Name: "t", Description: "v1", InputSchema: map[string]any{"type": "object"}}
	if !ps.Check("s", tool, sanitize.DefinitionHash(tool), "block") {
		t.Fatal("first sight refused")
	}
	changed := &mcp.Tool{Name: "t", Description: "v2", InputSchema: map[string]any{"type": "object"}}
	if ps.Approved("s", changed, "block") {
		t.Error("a changed definition counts as approved in block mode")
	}
	if !ps.Approved("s", tool, "block") || !ps.Approved("s", changed, "warn") {
		t.Error("the pinned definition, or any in warn mode, is not kept")
	}
}
