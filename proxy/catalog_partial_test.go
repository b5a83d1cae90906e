package proxy

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// failListsEnv makes the echo child offer a prompt and a resource and
// answer the comma-separated list methods it names with an error that holds
// the value of failSecretEnv, until its tool "heal" is called.
const failListsEnv = "SWITCHBOARD_TEST_FAIL_LISTS"

// addListFaults is the child side of failListsEnv. Tool "heal" stops the
// failures and adds a resource, which sends notifications/resources/list_changed.
// Tool "asked" answers the list methods received so far, sorted.
func addListFaults(s *mcp.Server) {
	var (
		mu     sync.Mutex
		failed = strings.Split(os.Getenv(failListsEnv), ",")
		asked  = map[string]bool{}
	)
	s.AddPrompt(&mcp.Prompt{Name: "hello", Description: "Say hello."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "doc"}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"}, read)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasSuffix(method, "/list") {
				mu.Lock()
				asked[method] = true
				fail := slices.Contains(failed, method)
				mu.Unlock()
				if fail {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "database login with " + os.Getenv(failSecretEnv) + " refused"}
				}
			}
			return next(ctx, method, req)
		}
	})
	s.AddTool(&mcp.Tool{Name: "heal", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			failed = nil
			mu.Unlock()
			s.AddResource(&mcp.Resource{URI: "test://later", Name: "later"}, read)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "healed"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "asked", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			var ms []string
			for m := range asked {
				ms = append(ms, m)
			}
			slices.Sort(ms)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(ms, ",")}}}, nil
		})
}

func serverStatus(t testing.TB, st StatusReport, name string) upstream.Status {
	t.Helper()
	for _, s := range st.Servers {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %q in /status", name)
	return upstream.Status{}
}

func metricsText(t testing.TB, admin string) string {
	t.Helper()
	_, body := get(t, admin, "/metrics")
	return body
}

// TestPartialCatalogStatusAndMetrics (#23): a server whose resources/list
// fails serves its tools; /status says which list failed, with the
// upstream's message redacted; the failure is counted in
// switchboard_upstream_list_failures_total; and once a list_changed
// re-list succeeds, the catalog is complete and the client gets
// notifications/resources/list_changed.
func TestPartialCatalogStatusAndMetrics(t *testing.T) {
	const secret = "partial-secret-8c1f2e"
	t.Setenv("SWITCHBOARD_TEST_PARTIAL_SECRET", secret)
	tp := startProxy(t, pipelineConfig(nil, map[string]any{
		failListsEnv:  "resources/list",
		failSecretEnv: "secret://env/SWITCHBOARD_TEST_PARTIAL_SECRET",
	}, nil), "http")
	changed := make(chan struct{}, 16)
	cs := tp.connect(t, &mcp.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
		changed <- struct{}{}
	}}, nil)
	waitTool(t, cs, "mcp_echo_echo")
	if res, err := call(cs, "mcp_echo_echo", map[string]any{"text": "still here"}); err != nil || !strings.Contains(resultText(t, res), "still here") {
		t.Fatalf("call on a partial catalog: %v", err)
	}

	st := serverStatus(t, status(t, tp.admin), "echo")
	msg := st.CatalogErrors[upstream.ListResources]
	if st.State != upstream.StateReady || st.Catalog != upstream.CatalogPartial || len(st.CatalogErrors) != 1 {
		t.Fatalf("status %+v, want ready with a partial catalog", st)
	}
	if strings.Contains(msg, secret) || msg != "database login with [REDACTED] refused" {
		t.Errorf("catalog error %q, want the upstream's message, redacted", msg)
	}
	if st.Prompts != 1 || st.CatalogRetry.IsZero() || st.ListFailures[upstream.ListResources] != 1 {
		t.Errorf("status %+v, want the prompt listed, a retry due and one failure counted", st)
	}
	metrics := metricsText(t, tp.admin)
	for _, want := range []string{
		`switchboard_upstream_list_failures_total{list="resources/list",server="echo"} 1`,
		`switchboard_upstream_catalog_partial{server="echo"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, secret) {
		t.Error("/metrics holds the secret")
	}

	if _, err := call(cs, "mcp_echo_heal", nil); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, tp.admin, "a complete catalog", func(r StatusReport) bool {
		s := serverStatus(t, r, "echo")
		return s.Catalog == upstream.CatalogComplete && s.CatalogErrors == nil && s.Resources == 2
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/list_changed after the catalog became complete")
	}
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil || len(res.Resources) != 2 {
		t.Fatalf("resources after the re-list: %v %v", res, err)
	}
	if !strings.Contains(metricsText(t, tp.admin), `switchboard_upstream_catalog_partial{server="echo"} 0`) {
		t.Error("catalog still partial in /metrics")
	}
	if got := serverStatus(t, status(t, tp.admin), "echo"); got.PID != st.PID || got.Restarts != 0 {
		t.Errorf("the server was restarted: pid %d → %d, %d restarts", st.PID, got.PID, got.Restarts)
	}
}

// TestSkippedListsNeverAsked: "resources": false and "listPrompts": false
// keep switchboard from asking for those lists at all, so their failure
// cannot make the catalog partial, and the server's prompts are not
// exposed.
func TestSkippedListsNeverAsked(t *testing.T) {
	tp := startProxy(t, pipelineConfig(map[string]any{"resources": false, "listPrompts": false},
		map[string]any{failListsEnv: "resources/list,resources/templates/list,prompts/list"}, nil), "http")
	cs := tp.connect(t, nil, nil)
	waitTool(t, cs, "mcp_echo_asked")
	res, err := call(cs, "mcp_echo_asked", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := unwrapText(resultText(t, res)); got != "tools/list" {
		t.Errorf("the upstream was asked for %q, want only tools/list", got)
	}
	st := serverStatus(t, status(t, tp.admin), "echo")
	if st.Catalog != upstream.CatalogComplete || st.Prompts != 0 || st.Resources != 0 {
		t.Errorf("status %+v, want a complete catalog without prompts or resources", st)
	}
	prompts, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prompts.Prompts {
		if p.Name != view.ResourceContextPrompt {
			t.Errorf("prompt %s listed with listPrompts: false", p.Name)
		}
	}
}

// unwrapText is the content inside an untrusted-content boundary: the
// lines after the security notice, up to the end marker.
func unwrapText(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], untrustedMarker) {
		return s
	}
	return strings.Join(lines[2:len(lines)-1], "\n")
}
