package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy"
	"github.com/mcp-switchboard/switchboard/upstream"
)

func TestPrintStatusTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rep := proxy.StatusReport{
		Version: "v1", Gen: 3, Digest: "abc", Time: now, Goroutines: 42,
		LastReload: &proxy.ReloadResult{OK: false, At: now, Reason: "sighup", Error: "mcpServers.x.command: required"},
		Servers: []upstream.Status{
			{Name: "up", Transport: "stdio", State: upstream.StateReady, PID: 123, Tools: 4, Uptime: 3725, Breaker: "closed"},
			{Name: "down", Transport: "http", State: upstream.StateRestarting, Restarts: 2, NextAttempt: now.Add(4 * time.Second),
				Breaker: "open", BreakerProbe: now.Add(20 * time.Second), LastError: "session ended:\nexit status 3"},
			{Name: "later", Transport: "stdio", State: upstream.StateIdle, Lazy: true, Breaker: "closed"},
			{Name: "pg", Transport: "stdio", State: upstream.StateReady, PID: 456, Tools: 1, Breaker: "closed",
				Catalog: upstream.CatalogPartial, CatalogErrors: map[string]string{"resources/list": "connect ECONNREFUSED 127.0.0.1:5432"},
				CatalogRetry: now.Add(10 * time.Second)},
		},
		Views: map[string]proxy.ViewStatus{"default": {Tools: 4, Sessions: 1}},
	}
	var b bytes.Buffer
	printStatus(&b, rep)
	out := b.String()
	for _, want := range []string{
		"config gen 3 (digest abc)  goroutines 42",
		"last reload 2026-01-02T03:04:05Z (sighup): rejected: mcpServers.x.command: required",
		"SERVER  TRANSPORT  STATE",
		"up      stdio      ready",
		"1h2m5s",
		"restarting (retry in 4s)",
		"open (probe in 20s)",
		"session ended: exit status 3",
		"idle (lazy)",
		"ready (catalog partial)",
		"pg: resources/list failed: connect ECONNREFUSED 127.0.0.1:5432 (retry in 10s)",
		"view default: 4 tools, 1 sessions",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
}
