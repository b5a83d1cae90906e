package proxy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestShutdownCutsARetire: a server a reload removed while its generation
// is still in use is drained for up to drainTimeout, but a shutdown that
// comes meanwhile ends by its own deadline (shutdownTimeout), not the
// drain's.
func TestShutdownCutsARetire(t *testing.T) {
	servers := func(names ...string) string {
		m := map[string]any{}
		for _, n := range names {
			var srv map[string]any
			_ = json.Unmarshal([]byte(pipelineConfig(nil, nil, nil)), &srv)
			m[n] = srv["mcpServers"].(map[string]any)["echo"]
		}
		b, _ := json.Marshal(map[string]any{"mcpServers": m, "drainTimeout": 120000, "shutdownTimeout": 500,
			"listen": "127.0.0.1:0", "adminListen": "127.0.0.1:0"})
		return string(b)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.json")
	if err := os.WriteFile(path, []byte(servers("a", "b", "gone")), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{ConfigPath: path, Stderr: &tlogWriter{t: t}, Getenv: func(string) string { return "" }, ReadyFile: filepath.Join(dir, "ready")}
	p, c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, c) }()
	tp := &testProxy{p: p, path: path, wire: &wireLog{}}
	tp.addr, tp.admin = waitReadyAddrs(t, o.ReadyFile, done)
	cs := tp.connect(t, nil, nil)
	waitTool(t, cs, "mcp_gone_calls")
	// A request of the first generation that is still being served when
	// the shutdown begins (one answered on a stream of its own, a call
	// waiting for its client's input): the retire of "gone" waits for it.
	held := p.serving.Acquire()
	defer held.Release()

	writeConfig(t, path, servers("a", "b"))
	waitStatus(t, tp.admin, "the reload", func(st StatusReport) bool { return len(st.Servers) == 2 })
	start := time.Now()
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("shutdown took %v with shutdownTimeout 500 ms", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no shutdown 30 s after it began (shutdownTimeout 500 ms): the retire's 120 s drain held it")
	}
}
