package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy"
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/instance"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

func TestPrintStatusTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rep := proxy.StatusReport{
		Version: "v1", Gen: 3, Digest: "abc", Time: now, Goroutines: 42, Replica: "gw-7f9c", SessionsResumed: 5,
		LastReload: &proxy.ReloadResult{OK: false, At: now, Reason: "sighup", Error: "mcpServers.x.command: required"},
		Audit: &dispatch.AuditStatus{File: "/var/log/audit.log", OnError: "refuse", Failing: true, FailingSince: &now, WriteFailures: 7,
			LastError: "write /var/log/audit.log: no space left on device"},
		Servers: []upstream.Status{
			{Name: "up", Transport: "stdio", State: upstream.StateReady, PID: 123, Tools: 4, Uptime: 3725, Breaker: "closed"},
			{Name: "down", Transport: "http", State: upstream.StateRestarting, Restarts: 2, NextAttempt: now.Add(4 * time.Second),
				Breaker: "open", BreakerProbe: now.Add(20 * time.Second), LastError: "session ended:\nexit status 3"},
			{Name: "later", Transport: "stdio", State: upstream.StateIdle, Lazy: true, Breaker: "closed"},
			{Name: "pg", Transport: "stdio", State: upstream.StateReady, PID: 456, Tools: 1, Breaker: "closed",
				Catalog: upstream.CatalogPartial, CatalogErrors: map[string]string{"resources/list": "connect ECONNREFUSED 127.0.0.1:5432"},
				CatalogRetry: now.Add(10 * time.Second), StrayAnswers: 12},
		},
		Connections: &proxy.ConnectionsStatus{Open: 192, Max: 192},
		Views:       map[string]proxy.ViewStatus{"default": {Tools: 4, Sessions: 1}},
		Collisions: []view.CollisionStatus{{Kind: "resource", Name: "file:///README.md", Winner: "a",
			Losers: []view.CollisionLoser{{Server: "b"}, {Server: "c"}, {Server: "d"}, {Server: "e"}, {Server: "f"}}}},
		Findings: []view.FindingStatus{
			{Server: "up", Kind: "tool", Name: "helper", Patterns: []string{"ignore-previous", "tool-instruction"}},
			{Server: "pg", Kind: "template", Name: "pg://{", Skipped: "malformed template"},
		},
	}
	rep.Servers = append(rep.Servers, upstream.Status{Name: "npm", Transport: "stdio", State: upstream.StateFailed, Breaker: "closed",
		LastError: "connect: process exited before initialize finished", StderrTail: []string{"node:internal/modules/cjs/loader:1228", "Error: Cannot find module 'foo'"}})
	two := 2
	rep.Servers = append(rep.Servers, upstream.Status{Name: "iso", Transport: "stdio", State: upstream.StateReady, PID: 789, Breaker: "closed", Instances: &two})
	var b bytes.Buffer
	printStatus(&b, rep)
	out := b.String()
	for _, want := range []string{
		"config gen 3 (digest abc)  goroutines 42",
		"replica gw-7f9c  sessions resumed 5",
		"npm stderr (last 2 lines):\n  node:internal/modules/cjs/loader:1228\n  Error: Cannot find module 'foo'\n",
		"last reload 2026-01-02T03:04:05Z (sighup): rejected: mcpServers.x.command: required",
		"audit log /var/log/audit.log: writes failing since 2026-01-02T03:04:05Z (7 records lost, onError refuse): write /var/log/audit.log: no space left on device\n",
		"SERVER  TRANSPORT  STATE",
		"up      stdio      ready",
		"1h2m5s",
		"restarting (retry in 4s)",
		"open (probe in 20s)",
		"session ended: exit status 3",
		"idle (lazy)",
		"ready (catalog partial)",
		"789 (+2 per-client)",
		"pg: resources/list failed: connect ECONNREFUSED 127.0.0.1:5432 (retry in 10s)",
		"pg: 12 answers to no call in flight dropped",
		"downstream connections at the cap: 192 of 192 open",
		"view default: 4 tools, 1 sessions",
		"collision: resource file:///README.md is a's; also listed by b, c, d, 2 more\n",
		"up: tool helper suspicious (ignore-previous, tool-instruction)\n",
		"pg: template pg://{ skipped: malformed template\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
}

func TestPickTarget(t *testing.T) {
	a := instance.Record{PID: 11, Config: "/srv/a.json", Listen: "stdio", Admin: "127.0.0.1:40001"}
	b := instance.Record{PID: 12, Config: "/srv/b.json", Listen: "127.0.0.1:8931", Admin: "127.0.0.1:8932"}
	b2 := instance.Record{PID: 13, Config: "/srv/b.json", Listen: "stdio", Admin: "127.0.0.1:40003"}
	for _, c := range []struct {
		name             string
		flag, cfg, env   string
		running          []instance.Record
		addr, source     string
		notes, errSubstr []string
	}{
		{name: "flag wins over env", flag: "127.0.0.1:9000", env: "127.0.0.1:9100", addr: "127.0.0.1:9000", source: "from --admin",
			notes: []string{"SWITCHBOARD_ADMIN_LISTEN=127.0.0.1:9100 not used: --admin wins"}},
		{name: "env", env: "127.0.0.1:9100", running: []instance.Record{a}, addr: "127.0.0.1:9100", source: "from SWITCHBOARD_ADMIN_LISTEN",
			notes: []string{"also running: pid 11  admin 127.0.0.1:40001  mcp stdio  config /srv/a.json"}},
		{name: "only one running", running: []instance.Record{a}, addr: "127.0.0.1:40001", source: "the only switchboard running"},
		{name: "config wins over env", cfg: "/srv/a.json", env: "127.0.0.1:9100", running: []instance.Record{a}, addr: "127.0.0.1:40001", source: "registered for --config",
			notes: []string{"SWITCHBOARD_ADMIN_LISTEN=127.0.0.1:9100 not used: a switchboard is registered for --config"}},
		{name: "env when config not registered", cfg: "/srv/c.json", env: "127.0.0.1:9100", addr: "127.0.0.1:9100", source: "from SWITCHBOARD_ADMIN_LISTEN",
			notes: []string{"no running switchboard registered for /srv/c.json"}},
		{name: "by config", cfg: "/srv/a.json", running: []instance.Record{a, b}, addr: "127.0.0.1:40001", source: "registered for --config",
			notes: []string{"also running: pid 12"}},
		{name: "several running", running: []instance.Record{a, b}, errSubstr: []string{"2 switchboards are running", "pid 11", "pid 12", "--admin"}},
		{name: "several for one config", cfg: "/srv/b.json", running: []instance.Record{a, b, b2}, errSubstr: []string{"2 switchboards serve /srv/b.json", "pid 12", "pid 13"}},
		{name: "none running", addr: "127.0.0.1:8932", source: "the default address"},
		{name: "config not running", cfg: "/srv/c.json", running: []instance.Record{a}, addr: "127.0.0.1:8932", source: "the default address",
			notes: []string{"also running: pid 11", "no running switchboard registered for /srv/c.json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg, err := pickTarget(c.flag, c.cfg, c.env, c.running)
			if len(c.errSubstr) > 0 {
				if err == nil {
					t.Fatalf("picked %+v, want an error", tg)
				}
				for _, w := range c.errSubstr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tg.addr != c.addr || tg.source != c.source {
				t.Errorf("picked %s (%s), want %s (%s)", tg.addr, tg.source, c.addr, c.source)
			}
			if len(tg.notes) != len(c.notes) {
				t.Fatalf("notes %q, want %d like %q", tg.notes, len(c.notes), c.notes)
			}
			for i, w := range c.notes {
				if !strings.HasPrefix(tg.notes[i], w) {
					t.Errorf("note %q, want %q", tg.notes[i], w)
				}
			}
		})
	}
}

func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:8932":   "127.0.0.1:8932",
		"[::]:8932":      "[::1]:8932",
		":8932":          "127.0.0.1:8932",
		"10.0.0.5:8932":  "10.0.0.5:8932",
		"localhost:8932": "localhost:8932",
		"garbage":        "garbage",
	} {
		if got := dialAddr(in); got != want {
			t.Errorf("dialAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrintTarget(t *testing.T) {
	var b bytes.Buffer
	printTarget(&b, target{addr: "127.0.0.1:40001", source: "registered for --config", notes: []string{"also running: pid 12"}},
		proxy.StatusReport{Version: "v1.2.3", PID: 11, Config: "/srv/a.json", Listen: "stdio"})
	want := "switchboard v1.2.3  pid 11  admin 127.0.0.1:40001 (registered for --config)\nconfig /srv/a.json  mcp stdio\nnote: also running: pid 12\n"
	if b.String() != want {
		t.Errorf("header:\n%s\nwant:\n%s", b.String(), want)
	}
}
