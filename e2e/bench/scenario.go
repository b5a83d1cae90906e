package main

import (
	"context"
	"encoding/json"
	"errors"
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
// direct, through switchboard or through the peer, so both sides of a
// comparison speak the same protocol; only the stateless scenario leaves
// the version to the SDK (latestVersion).
const protocolVersion = "2025-11-25"

// latestVersion asks the go-sdk client for its default, 2026-07-28, which
// switchboard serves statelessly: one POST per request, no session.
const latestVersion = ""

// env is what every measurement shares: the binaries, a scratch directory,
// the HTTP client, the long-running HTTP echo server and where
// server-everything is.
type env struct {
	opts        *options
	switchboard string // binary
	fixture     string // binary
	peer        string // binary; "" when it did not build
	dir         string
	client      *http.Client
	fixtureURL  string // the streamable HTTP echo server, .../mcp
	fixtureProc *proc
	sbEnv       []string // extra environment for switchboard processes
	seq         int      // names config and ready files
	mu          sync.Mutex

	node, everything  string // Node 22 and server-everything's entry; "" if not found
	everythingVersion string
}

func newEnv(o *options, b binaries, dir string) *env {
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
		switchboard: b.switchboard,
		fixture:     b.fixture,
		peer:        b.peer,
		dir:         dir,
		client:      &http.Client{Transport: tr},
		sbEnv:       o.sbEnv,
	}
}

// findEverything looks for the cached Node 22 binary and
// server-everything's entry point under --npm, as .ci/setup installs them.
func (e *env) findEverything() error {
	if e.opts.npm == "" {
		return errors.New("no npm directory")
	}
	mods := filepath.Join(e.opts.npm, "node_modules")
	node := filepath.Join(mods, ".bin", "node")
	pkg := filepath.Join(mods, "@modelcontextprotocol", "server-everything")
	script := filepath.Join(pkg, "dist", "index.js")
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			return err
		}
	}
	var meta struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(pkg, "package.json")); err == nil {
		_ = json.Unmarshal(b, &meta)
	}
	e.node, e.everything, e.everythingVersion = node, script, meta.Version
	return nil
}

// everythingArgv is the command line of server-everything over stdio.
func (e *env) everythingArgv() []string { return []string{e.node, e.everything, "stdio"} }

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

func (e *env) everythingServer() map[string]any {
	argv := e.everythingArgv()
	return map[string]any{"command": argv[0], "args": argv[1:]}
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
	args := []string{"serve", "--config", config, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--ready-file", ready}
	if e.opts.pgo != "" {
		args = append(args, "--admin-pprof") // writePGO's profiles
	}
	p, err := startProc(append(slices.Clone(e.sbEnv), extraEnv...), e.switchboard, args...)
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

// connectHTTP opens one streamable HTTP session (initialize included),
// offering version (latestVersion: the SDK's default).
func (e *env) connectHTTP(ctx context.Context, url, version string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "switchboard-bench", Version: "1"}, nil)
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: e.client}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// connectStdio starts argv as a child over stdio and returns the session
// and the child's PID. The SDK owns the child; closing the session stops
// it, and cleanup kills it if that does not happen in time.
func (e *env) connectStdio(ctx context.Context, argv []string) (*mcp.ClientSession, int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
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

// How a scenario reaches its upstream.
const (
	direct      = "direct"      // the client talks to the upstream itself
	switchboard = "switchboard" // through switchboard, wrap+policy
	peer        = "peer"        // through TBXark/mcp-proxy
)

// The upstreams, as scenario groups.
const (
	everything = "everything" // server-everything over stdio (Node 22)
	httpEcho   = "http"       // the go-sdk echo fixture over streamable HTTP
	stdioEcho  = "stdio-echo" // the go-sdk echo fixture over stdio (the 2026-07-28 comparison)
)

// scenario is one way of reaching one upstream's echo tool.
type scenario struct {
	id       string // short key
	name     string // for tables
	upstream string // everything, httpEcho or stdioEcho
	kind     string // direct, switchboard or peer
	tool     string
	argKey   string   // the echo tool's argument
	version  string   // offered by the load client; latestVersion for the SDK's default
	env      []string // switchboard only: added to its environment
	wire     bool     // called by the hand-written client (wire.go), at the downstream version
	bytes    bool     // wire at 2025-11-25: with a 2026-07-28 request's _meta and headers (wireCaller.bytes)

	shared *mcp.ClientSession // stdio direct: one session for all workers
	url    string             // HTTP: one new session per worker
	pid    int                // process whose CPU is measured: switchboard, the peer, or the upstream when direct
	admin  string             // switchboard's admin address

	// Read after start-up.
	protocol   string // negotiated with the upstream (switchboard's /status, the peer's ready file)
	downstream string // negotiated by the load client
	idleRSS    int64  // KiB, once the upstream is ready and before any load
}

// dial returns n callers for n workers and a function that closes them.
func (e *env) dial(ctx context.Context, sc *scenario, n int) ([]caller, func(), error) {
	out := make([]caller, n)
	closeAll := func() {
		var wg sync.WaitGroup
		for _, c := range out {
			if c != nil {
				wg.Go(c.close)
			}
		}
		wg.Wait()
	}
	for i := range out {
		var err error
		switch {
		case sc.shared != nil:
			out[i] = sdkCaller{cs: sc.shared}
		case sc.wire:
			var c *wireCaller
			if c, err = e.dialWire(ctx, sc.url, sc.downstream, sc.bytes); err == nil {
				out[i] = c
			}
		default:
			var cs *mcp.ClientSession
			if cs, err = e.connectHTTP(ctx, sc.url, sc.version); err == nil {
				out[i] = sdkCaller{cs: cs, owned: true}
			}
		}
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: connect: %w", sc.id, err)
		}
	}
	return out, closeAll, nil
}

// setupScenarios starts what the load scenarios need, in table order: for
// server-everything over stdio (when found) and the echo fixture over
// HTTP, direct, through switchboard and through the peer (when it built);
// then switchboard → the echo fixture over stdio with a 2025-11-25 client
// and with a 2026-07-28 one; then the --compare processes.
func (e *env) setupScenarios(ctx context.Context) ([]*scenario, error) {
	var out []*scenario
	for _, up := range []string{everything, httpEcho} {
		if up == everything && e.node == "" {
			continue
		}
		label := map[string]string{everything: "server-everything (stdio)", httpEcho: "echo (HTTP)"}[up]
		tool, arg := "echo", "text"
		if up == everything {
			arg = "message"
		}
		d := &scenario{id: "direct-" + up, name: "direct → " + label, upstream: up, kind: direct, tool: tool, argKey: arg, version: protocolVersion}
		if up == everything {
			cs, pid, err := e.connectStdio(ctx, e.everythingArgv())
			if err != nil {
				return nil, fmt.Errorf("direct server-everything: %w", err)
			}
			d.shared, d.pid = cs, pid
			d.downstream = cs.InitializeResult().ProtocolVersion
		} else {
			d.url, d.pid = e.fixtureURL, e.fixtureProc.pid()
		}
		out = append(out, d)

		server := e.httpServer()
		if up == everything {
			server = e.everythingServer()
		}
		sc := &scenario{id: "sb-" + up, name: "switchboard → " + label + ", wrap+policy", upstream: up, kind: switchboard,
			tool: "mcp_" + upstreamKey(up) + "_" + tool, argKey: arg, version: protocolVersion}
		if err := e.startThrough(ctx, sc, sbConfig(map[string]any{upstreamKey(up): server}, true)); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.id, err)
		}
		out = append(out, sc)

		if e.peer != "" {
			pc := &scenario{id: "peer-" + up, name: "peer → " + label, upstream: up, kind: peer, tool: tool, argKey: arg, version: protocolVersion}
			server := map[string]any{"transportType": "streamable-http", "url": e.fixtureURL}
			if up == everything {
				argv := e.everythingArgv()
				server = map[string]any{"command": argv[0], "args": argv[1:]}
			}
			if err := e.startPeerScenario(ctx, pc, upstreamKey(up), server); err != nil {
				return nil, fmt.Errorf("%s: %w", pc.id, err)
			}
			out = append(out, pc)
		}
	}
	for _, v := range []struct{ version, label string }{{protocolVersion, "2025-11-25"}, {latestVersion, "2026-07-28"}} {
		sc := &scenario{id: "sb-stdio-echo-" + v.label, name: v.label + " client → switchboard → echo (stdio), wrap+policy",
			upstream: stdioEcho, kind: switchboard, tool: "mcp_echo_echo", argKey: "text", version: v.version}
		if err := e.startThrough(ctx, sc, sbConfig(map[string]any{"echo": e.stdioServer("echo")}, true)); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.id, err)
		}
		// The same switchboard again, with the hand-written client.
		w := *sc
		w.id, w.name, w.wire = wireID(v.label), v.label+" wire client → switchboard → echo (stdio), wrap+policy", true
		out = append(out, sc, &w)
		if v.version == protocolVersion {
			// And with the bytes a 2026-07-28 request carries besides.
			f := w
			f.id, f.name, f.bytes = idWireBytes, v.label+" wire client with 2026-07-28's _meta and headers → switchboard → echo (stdio), wrap+policy", true
			out = append(out, &f)
		}
	}
	if e.node != "" {
		for i, extra := range e.opts.compare {
			// Short enough for the plot's legend; it is wrap+policy too.
			sc := &scenario{id: compareID(i), name: "switchboard, " + strings.Join(extra, " ") + " → server-everything (stdio)",
				upstream: everything, kind: switchboard, tool: "mcp_everything_echo", argKey: "message", version: protocolVersion, env: extra}
			if err := e.startThrough(ctx, sc, sbConfig(map[string]any{"everything": e.everythingServer()}, true)); err != nil {
				return nil, fmt.Errorf("%s: %w", sc.id, err)
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// upstreamKey is the server key switchboard's config gives an upstream.
func upstreamKey(up string) string {
	if up == everything {
		return "everything"
	}
	return "echo"
}

// Scenario IDs the report reads.
const (
	idDirectStdio = "direct-" + everything
	idSBStdio     = "sb-" + everything
	idPeerStdio   = "peer-" + everything
	idDirectHTTP  = "direct-" + httpEcho
	idSBHTTP      = "sb-" + httpEcho
	idPeerHTTP    = "peer-" + httpEcho
	idLegacy      = "sb-stdio-echo-2025-11-25"
	idStateless   = "sb-stdio-echo-2026-07-28"
)

// compareID names the scenario that runs with --compare's i-th environment.
func compareID(i int) string { return fmt.Sprintf("sb-everything-cmp%d", i+1) }

// startThrough starts the switchboard of a through scenario, waits for its
// tool, and records the protocols negotiated on both sides and the idle RSS.
func (e *env) startThrough(ctx context.Context, sc *scenario, cfg map[string]any) error {
	s, err := e.startSwitchboard(ctx, cfg, sc.env...)
	if err != nil {
		return err
	}
	sc.pid, sc.url, sc.admin = s.pid(), s.url(), s.admin
	if err := e.probe(ctx, sc, s.proc); err != nil {
		return err
	}
	if st, err := e.status(ctx, s); err == nil {
		for _, srv := range st.Servers {
			sc.protocol = srv.Protocol
		}
	}
	time.Sleep(300 * time.Millisecond)
	if m, err := readMem(s.pid()); err == nil {
		sc.idleRSS = m.rss
	}
	return nil
}

// startPeerScenario starts the peer, TBXark/mcp-proxy, in front of one
// upstream (server, in its config's mcpServers form, under name), waits
// for its tool, and records the idle RSS. The peer cannot listen on port
// 0, so it gets a port that was free a moment before; it serves the
// upstream at /NAME/. Its client asks the upstream for mcp-go's newest
// version, 2025-11-25, the version switchboard negotiates with the same
// upstreams; the peer reports none, so that is what the report gives.
func (e *env) startPeerScenario(ctx context.Context, sc *scenario, name string, server map[string]any) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	cfg := map[string]any{
		"mcpProxy": map[string]any{
			"baseURL": "http://" + addr, "addr": addr, "name": "peer", "version": "1.0.0", "type": "streamable-http",
			"options": map[string]any{"logEnabled": false, "panicIfInvalid": true},
		},
		"mcpServers": map[string]any{name: server},
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	file := e.nextName("peer") + ".json"
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return err
	}
	p, err := startProc(nil, e.peer, "--config", file, "--expand-env=false")
	if err != nil {
		return err
	}
	sc.pid, sc.url, sc.protocol = p.pid(), "http://"+addr+"/"+name+"/", protocolVersion+" (asked)"
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := waitRoute(wctx, sc.url, p); err != nil {
		p.stop(5 * time.Second)
		return err
	}
	if err := e.probe(ctx, sc, p); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	if m, err := readMem(p.pid()); err == nil {
		sc.idleRSS = m.rss
	}
	return nil
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitRoute polls url until it is served: the peer listens at once but
// routes /NAME/ only once its client has connected to the upstream, and
// answers 404 until then. It gives up when p exits.
func waitRoute(ctx context.Context, url string, p *proc) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("the peer exited before serving:\n%s", p.output.String())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the peer to serve %s: %w\n%s", url, ctx.Err(), p.output.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// probe opens one session the way the load does, waits until the
// scenario's tool is listed, makes one checked call and records the
// protocol the client negotiated.
func (e *env) probe(ctx context.Context, sc *scenario, p *proc) error {
	cs, err := e.connectHTTP(ctx, sc.url, sc.version)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, p.output.String())
	}
	defer cs.Close()
	sc.downstream = cs.InitializeResult().ProtocolVersion
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := waitTools(wctx, cs, []string{sc.tool}, 5*time.Millisecond); err != nil {
		return fmt.Errorf("%w\n%s", err, p.output.String())
	}
	if err := call(wctx, cs, sc); err != nil {
		return fmt.Errorf("first call: %w\n%s", err, p.output.String())
	}
	return nil
}
