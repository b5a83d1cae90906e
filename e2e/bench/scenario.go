package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is offered by every client session the benchmark opens,
// direct or through switchboard, so both sides of a comparison speak the same
// protocol.
const protocolVersion = "2025-11-25"

// env is what every measurement shares: the binaries, a scratch directory,
// the HTTP client and the long-running HTTP echo server.
type env struct {
	opts        *options
	switchboard string // binary
	fixture     string // binary
	dir         string
	client      *http.Client
	fixtureURL  string // the streamable HTTP echo server, .../mcp
	fixtureProc *proc
	sbEnv       []string // extra environment for switchboard processes
	seq         int      // names config and ready files
	mu          sync.Mutex
}

func newEnv(o *options, switchboard, fixture, dir string) *env {
	// One pool for all sessions. Its idle limit is above the largest number
	// of concurrent POSTs, so connections are reused instead of being closed
	// and redialled between calls (http.DefaultTransport keeps 2 per host).
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
	}
	return &env{
		opts:        o,
		switchboard: switchboard,
		fixture:     fixture,
		dir:         dir,
		client:      &http.Client{Transport: tr},
		sbEnv:       o.sbEnv,
	}
}

func (e *env) nextName(prefix string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	return filepath.Join(e.dir, fmt.Sprintf("%s-%d", prefix, e.seq))
}

// waitFile polls for a non-empty file, every interval, until p exits or ctx
// is done.
func waitFile(ctx context.Context, path string, p *proc, interval time.Duration) (string, error) {
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b), nil
		}
		if p != nil && p.exited() {
			return "", fmt.Errorf("%s exited before writing %s:\n%s", p.name, filepath.Base(path), p.output.String())
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s: %w", filepath.Base(path), ctx.Err())
		case <-time.After(interval):
		}
	}
}

// startFixtureHTTP runs the echo server over streamable HTTP.
func (e *env) startFixtureHTTP(ctx context.Context) error {
	ready := e.nextName("fixture-url")
	p, err := startProc(nil, e.fixture, "--transport", "http", "--listen", "127.0.0.1:0", "--ready-file", ready, "--name", "echo")
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	url, err := waitFile(wctx, ready, p, 5*time.Millisecond)
	if err != nil {
		return err
	}
	e.fixtureURL, e.fixtureProc = strings.TrimSpace(url), p
	return nil
}

// sbConfig is a switchboard config over servers. With policy on, results are
// wrapped and the global allow/deny globs apply; off, results pass as they
// are and there is no policy.
func sbConfig(servers map[string]any, policy bool) map[string]any {
	c := map[string]any{
		"mcpServers": servers,
		"sanitize":   map[string]any{"wrapResults": policy},
	}
	if policy {
		c["tools"] = map[string]any{"allow": []string{"mcp_*"}, "deny": []string{"mcp_*_nothing*"}}
	}
	return c
}

func (e *env) stdioServer(name string) map[string]any {
	return map[string]any{"command": e.fixture, "args": []string{"--name", name}}
}

func (e *env) httpServer() map[string]any {
	return map[string]any{"type": "http", "url": e.fixtureURL}
}

// sbProc is a running switchboard.
type sbProc struct {
	*proc
	addr, admin string
	ready       time.Duration // process start to ready file
}

func (s *sbProc) url() string { return "http://" + s.addr + "/mcp" }

// startSwitchboard writes cfg and runs `switchboard serve` on loopback port
// 0. It returns once the ready file names both listeners; upstreams may
// still be starting.
func (e *env) startSwitchboard(ctx context.Context, cfg map[string]any, extraEnv ...string) (*sbProc, error) {
	base := e.nextName("switchboard")
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	config, ready := base+".json", base+".ready"
	if err := os.WriteFile(config, b, 0o644); err != nil {
		return nil, err
	}
	p, err := startProc(append(slices.Clone(e.sbEnv), extraEnv...), e.switchboard, "serve", "--config", config,
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--ready-file", ready)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lines, err := waitFile(wctx, ready, p, 250*time.Microsecond)
	if err != nil {
		p.stop(5 * time.Second)
		return nil, err
	}
	s := &sbProc{proc: p, ready: time.Since(p.started)}
	parts := strings.Fields(lines)
	if len(parts) != 2 {
		p.stop(5 * time.Second)
		return nil, fmt.Errorf("switchboard ready file holds %q", lines)
	}
	s.addr, s.admin = parts[0], parts[1]
	return s, nil
}

// status reads switchboard's /status.
func (e *env) status(ctx context.Context, s *sbProc) (*sbStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.admin+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st sbStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("decode /status: %w", err)
	}
	return &st, nil
}

// sbStatus is the part of /status the benchmark reads.
type sbStatus struct {
	Servers []struct {
		Name     string `json:"name"`
		State    string `json:"state"`
		Protocol string `json:"protocol"`
	} `json:"servers"`
	Views map[string]struct {
		Sessions int `json:"sessions"`
	} `json:"views"`
}

// connectHTTP opens one streamable HTTP session (initialize included).
func (e *env) connectHTTP(ctx context.Context, url string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "switchboard-bench", Version: "1"}, nil)
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: e.client}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
}

// connectStdio starts the echo server as a child over stdio and returns the
// session and the child's PID. The SDK owns the child; closing the session
// stops it, and cleanup kills it if that does not happen in time.
func (e *env) connectStdio(ctx context.Context) (*mcp.ClientSession, int, error) {
	cmd := exec.Command(e.fixture, "--name", "echo")
	cmd.SysProcAttr = childAttr()
	c := mcp.NewClient(&mcp.Implementation{Name: "switchboard-bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := c.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		if cmd.Process != nil {
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		}
		return nil, 0, err
	}
	pid := cmd.Process.Pid
	onCleanup(func() {
		closed := make(chan struct{})
		go func() {
			_ = cs.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return cs, pid, nil
}

// listTools returns the names of every tool, through all pages.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]string, error) {
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		names = append(names, t.Name)
	}
	return names, nil
}

// waitTools lists tools on cs until every name in want is present.
func waitTools(ctx context.Context, cs *mcp.ClientSession, want []string, interval time.Duration) error {
	for {
		names, err := listTools(ctx, cs)
		if err == nil && containsAll(names, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("tools %v not listed (have %v)", want, names)
			}
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// scenario is one way of reaching the echo tool. Direct scenarios talk to
// the echo server; through scenarios talk to a switchboard in front of it.
type scenario struct {
	id       string // short key
	name     string // for tables
	upstream string // "stdio" or "http": how the echo server is reached
	through  bool
	policy   bool // through only: wrapping and policy on
	tool     string
	env      []string // through only: added to switchboard's environment

	shared *mcp.ClientSession // stdio direct: one session for all workers
	url    string             // HTTP: one new session per worker
	pid    int                // process whose CPU is measured: switchboard, or the echo server when direct
	sb     *sbProc

	// Through only, read after start-up.
	protocol string // negotiated with the upstream, from /status
	idleRSS  int64  // KiB, once the upstream is ready and before any load
}

// dial returns n sessions for n workers and a function that closes those
// the call opened.
func (e *env) dial(ctx context.Context, sc *scenario, n int) ([]*mcp.ClientSession, func(), error) {
	out := make([]*mcp.ClientSession, n)
	if sc.shared != nil {
		for i := range out {
			out[i] = sc.shared
		}
		return out, func() {}, nil
	}
	closeAll := func() {
		var wg sync.WaitGroup
		for _, cs := range out {
			if cs != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_ = cs.Close()
				}()
			}
		}
		wg.Wait()
	}
	for i := range out {
		cs, err := e.connectHTTP(ctx, sc.url)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: connect: %w", sc.id, err)
		}
		out[i] = cs
	}
	return out, closeAll, nil
}

// setupScenarios starts what the load scenarios need, in table order:
// for each upstream transport, direct, then through with policy on, then off.
func (e *env) setupScenarios(ctx context.Context) ([]*scenario, error) {
	var out []*scenario
	for _, up := range []string{"stdio", "http"} {
		direct := &scenario{id: "direct-" + up, name: "direct → " + up, upstream: up, tool: "echo"}
		if up == "stdio" {
			cs, pid, err := e.connectStdio(ctx)
			if err != nil {
				return nil, fmt.Errorf("direct stdio: %w", err)
			}
			direct.shared, direct.pid = cs, pid
		} else {
			direct.url, direct.pid = e.fixtureURL, e.fixtureProc.pid()
		}
		out = append(out, direct)
		for _, policy := range []bool{true, false} {
			sc := &scenario{upstream: up, through: true, policy: policy, tool: "mcp_echo_echo"}
			sc.id, sc.name = "sb-"+up+"-plain", "switchboard → "+up+", plain"
			if policy {
				sc.id, sc.name = "sb-"+up+"-policy", "switchboard → "+up+", wrap+policy"
			}
			server := e.stdioServer("echo")
			if up == "http" {
				server = e.httpServer()
			}
			if err := e.startThrough(ctx, sc, sbConfig(map[string]any{"echo": server}, policy)); err != nil {
				return nil, fmt.Errorf("%s: %w", sc.id, err)
			}
			out = append(out, sc)
		}
		if up != "stdio" {
			continue
		}
		for i, extra := range e.opts.compare {
			sc := &scenario{id: compareID(i), name: "switchboard → stdio, wrap+policy, " + strings.Join(extra, " "),
				upstream: up, through: true, policy: true, tool: "mcp_echo_echo", env: extra}
			if err := e.startThrough(ctx, sc, sbConfig(map[string]any{"echo": e.stdioServer("echo")}, true)); err != nil {
				return nil, fmt.Errorf("%s: %w", sc.id, err)
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// compareID names the scenario that runs with --compare's i-th environment.
func compareID(i int) string { return fmt.Sprintf("sb-stdio-policy-cmp%d", i+1) }

// startThrough starts the switchboard of a through scenario, waits for the
// echo tool, and records the negotiated protocol and the idle RSS.
func (e *env) startThrough(ctx context.Context, sc *scenario, cfg map[string]any) error {
	s, err := e.startSwitchboard(ctx, cfg, sc.env...)
	if err != nil {
		return err
	}
	sc.sb, sc.pid, sc.url = s, s.pid(), s.url()
	cs, err := e.connectHTTP(ctx, sc.url)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = waitTools(wctx, cs, []string{sc.tool}, 5*time.Millisecond)
	_ = cs.Close()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, s.output.String())
	}
	if st, err := e.status(ctx, s); err == nil {
		for _, srv := range st.Servers {
			if srv.Name == "echo" {
				sc.protocol = srv.Protocol
			}
		}
	}
	time.Sleep(300 * time.Millisecond)
	if m, err := readMem(s.pid()); err == nil {
		sc.idleRSS = m.rss
	}
	return nil
}
