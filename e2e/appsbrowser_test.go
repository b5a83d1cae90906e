package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// appHostPage is a minimal MCP Apps host: it renders the app (/app) in an
// iframe and speaks the app bridge's postMessage JSON-RPC: it answers
// ui/initialize, sends the tool's result once the app is initialized,
// forwards the app's tools/call to /call (which calls switchboard), and
// answers any other request with an empty result.
const appHostPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>e2e MCP Apps host</title>
<style>body{margin:0;font:14px sans-serif}header{padding:8px 12px;background:#223;color:#fff}
iframe{border:0;width:100%;height:900px}</style></head>
<body><header>e2e host · app read through switchboard: <code id="uri"></code></header>
<iframe id="app" sandbox="allow-scripts allow-same-origin" src="/app"></iframe>
<script>
const frame = document.getElementById("app");
document.getElementById("uri").textContent = new URLSearchParams(location.search).get("uri") || "";
window.hostLog = [];
const send = (m) => frame.contentWindow.postMessage(Object.assign({jsonrpc: "2.0"}, m), "*");
const call = async (name, args) => {
  const r = await fetch("/call", {method: "POST", body: JSON.stringify({name, arguments: args || {}})});
  return r.json();
};
window.addEventListener("message", async (e) => {
  if (e.source !== frame.contentWindow) return;
  const m = e.data || {};
  window.hostLog.push(m.method || ("answer " + m.id));
  if (m.method === "ui/initialize") {
    send({id: m.id, result: {protocolVersion: m.params.protocolVersion,
      hostInfo: {name: "e2e-host", version: "1"},
      hostCapabilities: {serverTools: {}, logging: {}, openLinks: {}},
      hostContext: {theme: "light", displayMode: "inline"}}});
  } else if (m.method === "ui/notifications/initialized") {
    const out = await call("get-time", {});
    send({method: "ui/notifications/tool-input", params: {arguments: {}}});
    if (out.result) send({method: "ui/notifications/tool-result", params: out.result});
  } else if (m.method === "tools/call") {
    const out = await call(m.params.name, m.params.arguments);
    send(out.error ? {id: m.id, error: {code: -32603, message: out.error}} : {id: m.id, result: out.result});
  } else if (m.id !== undefined && m.method) {
    send({id: m.id, result: {}});
  }
});
</script></body></html>`

// TestMCPAppRendersInBrowser renders the example MCP App
// (server-basic-react's get-time) in headless Chromium: its HTML read
// through switchboard under its public ui:// URI, in a small host page
// that implements the app bridge and forwards the app's tool calls,
// which name the tool by its server's own name (get-time), to
// switchboard. The app initializes, shows the server time from the
// tool's result, and its "Get Server Time" button calls get-time through
// switchboard again; the page reports no script error.
func TestMCPAppRendersInBrowser(t *testing.T) {
	b := startBrowser(t)
	dir := npmDir(t)
	node := node22(t)
	react, err := filepath.EvalSymlinks(npmBin(t, "mcp-server-basic-react"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"react": map[string]any{"command": node, "args": []string{react, "--stdio"}},
	}}
	s := startSwitchboardIn(t, t.TempDir(), dir, cfg, npmEnv(t))
	cs := s.client(t, appsClientOptions())
	var tools map[string]*mcp.Tool
	testutil.Eventually(t, 60*time.Second, "the example server listed", func() bool {
		tools = listTools(t, cs)
		return tools["mcp_react_get-time"] != nil
	})
	uri := appURI(tools["mcp_react_get-time"].Meta)
	if uri != "ui://react/get-time/mcp-app.html" {
		t.Errorf("get-time names %q, want ui://react/get-time/mcp-app.html", uri)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text == "" {
		t.Fatalf("read %s through switchboard: %v %.300s", uri, err, js(res))
	}
	page := res.Contents[0].Text

	var mu sync.Mutex
	var called []string
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(appHostPage))
	})
	mux.HandleFunc("/app", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	})
	mux.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		called = append(called, p.Name)
		mu.Unlock()
		out := map[string]any{}
		res, err := cs.CallTool(r.Context(), &mcp.CallToolParams{Name: p.Name, Arguments: p.Arguments})
		if err != nil {
			out["error"] = err.Error()
		} else {
			out["result"] = res
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	host := httptest.NewServer(mux)
	t.Cleanup(host.Close)

	b.navigate(host.URL + "/?uri=" + uri)
	shown := func() string {
		var text string
		b.eval(`(() => { const d = document.getElementById("app").contentDocument;
			const c = d && d.querySelector("code"); return c ? c.textContent : "" })()`, &text)
		return text
	}
	var first string
	testutil.Eventually(t, 30*time.Second, "the app shows the server time", func() bool {
		first = shown()
		return strings.Contains(first, "20") && !strings.Contains(first, "Loading")
	})
	b.eval(`(() => { const d = document.getElementById("app").contentDocument;
		[...d.querySelectorAll("button")].find(x => x.textContent === "Get Server Time").click(); return true })()`, nil)
	testutil.Eventually(t, 30*time.Second, "the button's call", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(called) >= 2
	})
	mu.Lock()
	for _, name := range called {
		if name != "get-time" {
			t.Errorf("the host forwarded a call to %q, want the app's own name get-time", name)
		}
	}
	mu.Unlock()
	var log []string
	b.eval(`window.hostLog.filter(m => m.startsWith("ui/") || m === "tools/call")`, &log)
	for _, want := range []string{"ui/initialize", "ui/notifications/initialized", "tools/call"} {
		if !slices.Contains(log, want) {
			t.Errorf("the app sent %v, without %s", log, want)
		}
	}
	_, errs := b.seen()
	for _, e := range errs {
		t.Errorf("the page reported: %s", e)
	}
	t.Logf("the app shows %q; it sent %v", first, log)
	screenshotTo(b, "apps-basic-react.png")
}
