package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/e2e/internal/testutil"
)

// TestHealthzUnderFDExhaustion: clients that open more connections than
// the process has descriptors (here 256) do not take the admin listener's:
// with switchboard holding as many downstream connections as it may,
// /healthz and /status still answer (issue 39, item 6: a liveness probe
// that fails there gets the pod killed with every session).
func TestHealthzUnderFDExhaustion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, map[string]any{"mcpServers": map[string]any{"p": fixtureServer("p")}})
	ready := filepath.Join(dir, "ready")
	p := start(t, dir, nil, "sh", "-c", `ulimit -n 256 && exec "$0" "$@"`, switchboard, "serve", "--config", cfg,
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--ready-file", ready)
	parts := strings.Fields(waitFile(t, ready, 30*time.Second, p))
	if len(parts) != 2 {
		t.Fatalf("ready file holds %q", parts)
	}
	addr, admin := parts[0], parts[1]
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	var conns struct{ Open, Max int }
	testutil.Eventually(t, 30*time.Second, "/healthz answering 200 with the downstream connections at their cap", func() bool {
		resp, err := hc.Get("http://" + admin + "/healthz")
		if err != nil {
			t.Logf("healthz: %v", err)
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Logf("healthz: %s", resp.Status)
			return false
		}
		resp, err = hc.Get("http://" + admin + "/status")
		if err != nil {
			t.Logf("status: %v", err)
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Connections struct{ Open, Max int }
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Logf("status: %v", err)
			return false
		}
		conns = st.Connections
		return conns.Max > 0 && conns.Open == conns.Max
	})
	if conns.Max >= 256 {
		t.Errorf("downstream connections capped at %d, want fewer than the 256 descriptors", conns.Max)
	}
	// /status shows the cap reached when the last slot is taken; the WARN
	// comes with the next connection refused a slot, and reaches the
	// captured stderr through a pipe, so it is waited for.
	testutil.Eventually(t, 10*time.Second, "a WARN that the downstream connections reached their cap", func() bool {
		return strings.Contains(p.Stderr(), "downstream connections at the cap")
	})
}
