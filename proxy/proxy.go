package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/admin"
	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/edge"
	"github.com/mcp-switchboard/switchboard/proxy/internal/connlimit"
	"github.com/mcp-switchboard/switchboard/proxy/internal/gctune"
	"github.com/mcp-switchboard/switchboard/proxy/internal/logbridge"
	"github.com/mcp-switchboard/switchboard/proxy/internal/pin"
	"github.com/mcp-switchboard/switchboard/proxy/internal/stdio"
	"github.com/mcp-switchboard/switchboard/proxy/internal/sysmon"
	"github.com/mcp-switchboard/switchboard/proxy/mrtr"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/sanitize"
	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// Version is set at build time with -ldflags "-X …/proxy.Version=v1.2.3".
var Version = "dev"

// Interface guards: the concrete leaves satisfy the interfaces other leaves
// declare.
var (
	_ sanitize.Redactor = (*secrets.Set)(nil)
	_ upstream.Expander = upstreamSecrets{}
)

// Options configure Run. Flag values override the environment, which
// overrides the file.
type Options struct {
	ConfigPath  string // if empty, the embedded default config is used
	Listen      string
	AdminListen string
	LogLevel    string
	LogFormat   string
	Stdio       bool   // serve one client over stdin/stdout instead of HTTP
	Replica     string // names this replica in session IDs (default $SWITCHBOARD_REPLICA, else the host name)
	ReadyFile   string // receives "listen\nadmin\n" once both listeners are bound ("stdio", and "none" without admin, with Stdio)
	AdminPprof  bool   // the admin listener serves the runtime's profiles under /debug/pprof/
	// CatalogDir is where servers' catalogs are kept when the config's
	// catalogCache names no directory (DefaultCatalogDir for the CLI); ""
	// keeps none.
	CatalogDir string

	Stdin  io.Reader // stdio mode; if nil, os.Stdin
	Stdout io.Writer // stdio mode; if nil, os.Stdout
	Stderr io.Writer // logs; if nil, os.Stderr
	Getenv func(string) string
}

// idleConnTimeout closes a keep-alive connection that carries no request
// for this long, on both listeners.
const idleConnTimeout = 2 * time.Minute

// ConfigError is a config that does not parse or validate; the CLI exits 2.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Proxy is a running switchboard.
type Proxy struct {
	opts     Options
	log      hclog.Logger
	sdkLog   *slog.Logger
	redactor *secrets.Set
	resolver *secrets.Resolver
	builder  *view.Builder

	// serving is what is served now: one snapshot and every view built
	// from it, swapped whole (publish.go).
	serving *dispatch.Serving
	// activity counts each view's calls per minute, for /status.
	activity *telemetry.Activity
	pubMu    sync.Mutex     // serialises publishing; guards notices
	notices  view.NoticeLog // what of the views' notes was logged (package view)
	// d answers the downstream sessions (package dispatch).
	d *dispatch.Dispatcher
	// edge serves the clients over HTTP (package edge).
	edge *edge.Edge
	// consents are the in-band OAuth consents under way, whose start and
	// callback URLs edge serves.
	consents *oauth.Consents

	// listenAddr and adminAddr are the bound addresses ("stdio", "none"),
	// set before anything serves.
	listenAddr, adminAddr string
	// conns caps the downstream connections below the descriptor limit
	// (package connlimit); nil with --stdio or no known limit.
	conns *connlimit.Listener

	mu  sync.Mutex // guards gen, hs and obs
	gen int64
	hs  handleSet          // the shared upstream handles, served and pending (pending.go)
	obs dispatch.Observers // telemetry and audit of the generations published now

	stopping atomic.Bool    // set when shutdown begins; /readyz turns 503
	bg       sync.WaitGroup // background work (retiring handles, reload loop, start-up memory release)
	// bgCtx bounds background work that waits (a retire's drain); it ends
	// at the shutdown deadline (cutBackground).
	bgCtx         context.Context
	cutBackground context.CancelFunc

	reloadReq  chan string
	lastReload atomic.Pointer[ReloadResult]

	pins     *pin.Store
	catalogs *catalogCache // each server's last catalog on disk (catalogcache.go)
	started  time.Time     // when New made the proxy: the first lists' wait counts from it
	parked   *mrtr.Calls   // 2026-07-28 calls waiting for input (package mrtr)
}

// loadConfig reads, parses, overrides and validates the config.
func loadConfig(o Options) (*config.Config, error) {
	data := defaultConfig
	if o.ConfigPath != "" {
		b, err := os.ReadFile(o.ConfigPath)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("read config: %w", err)}
		}
		data = b
	}
	return loadConfigData(o, data)
}

// loadConfigData is loadConfig of data already read from o.ConfigPath (the
// reload loop's settled read).
func loadConfigData(o Options, data []byte) (*config.Config, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c, err := config.Load(data, config.Source{Path: o.ConfigPath, Getenv: getenv})
	if err != nil {
		return nil, &ConfigError{err}
	}
	if o.ConfigPath == "" {
		if err := useSelfForDemo(c); err != nil {
			return nil, err
		}
	}
	c.ApplyEnv(getenv)
	if o.Listen != "" {
		c.Listen = o.Listen
	}
	if o.AdminListen != "" {
		c.AdminListen = o.AdminListen
	}
	if o.LogLevel != "" {
		c.LogLevel = o.LogLevel
	}
	if o.LogFormat != "" {
		c.LogFormat = o.LogFormat
	}
	if err := c.Validate(); err != nil {
		return nil, &ConfigError{err}
	}
	return c, nil
}

// logNotes logs what loading c decided that is not an error: keys of
// another client it skipped (one line), values read in another client's
// unit, and c.Warnings (the list switchboard validate prints: variables
// that are not set, credentials written in plain text). Notes name paths
// and variables, never values.
func logNotes(log hclog.Logger, c *config.Config) {
	if l := c.Notes.IgnoredLine(); l != "" {
		log.Info("ignored keys of another client", "reason", l)
	}
	for _, n := range c.Notes.Info {
		log.Info("config note", "reason", n.Error())
	}
	for _, n := range c.Warnings() {
		log.Warn("config warning", "reason", n.Error())
	}
}

func newLogger(c *config.Config, w io.Writer, redactor *secrets.Set) hclog.Logger {
	level := hclog.LevelFromString(c.LogLevel)
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "switchboard",
		Level:      level,
		Output:     redactor.Writer(w),
		JSONFormat: c.LogFormat == "json",
	})
}

// The pin store is the views' pin check.
var _ view.PinChecker = (*pin.Store)(nil)

// New builds a proxy from options: it loads the config and sets up logging,
// secrets and the downstream servers, but starts nothing.
func New(o Options) (*Proxy, *config.Config, error) {
	c, err := loadConfig(o)
	if err != nil {
		return nil, nil, err
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	redactor := secrets.NewSet()
	log := newLogger(c, o.Stderr, redactor)
	p := &Proxy{
		opts:      o,
		log:       log,
		sdkLog:    slog.New(logbridge.New(log.Named("sdk"), true)),
		redactor:  redactor,
		activity:  telemetry.NewActivity(),
		consents:  oauth.NewConsents(0),
		resolver:  secrets.NewResolver(resolverOptions(redactor)),
		hs:        handleSet{served: map[string]*upstream.Handle{}, pending: map[string]*pendingStart{}},
		reloadReq: make(chan string, 1),
		pins:      pin.NewStore(log.Named("pins")),
		catalogs:  newCatalogCache(catalogDir(c.CatalogCache, o.CatalogDir), log.Named("catalogs")),
		started:   time.Now(),
		parked:    mrtr.New(),
	}
	p.bgCtx, p.cutBackground = context.WithCancel(context.Background())
	p.builder = &view.Builder{Redactor: redactor, Pins: p.pins, Log: log}
	tel, err := p.newTelemetry(context.Background(), c)
	if err != nil {
		return nil, nil, err
	}
	audit, err := dispatch.NewAuditLog(c.Audit, o.Stderr, p.redact, p.log.Named("audit"))
	if err != nil {
		tel.Close(context.Background())
		return nil, nil, &ConfigError{fmt.Errorf("audit.file: %w", err)}
	}
	p.obs = dispatch.Observers{Tel: tel, Audit: audit}
	p.pins.OnViolation = func() { p.serving.Load().Tel.PinViolation(context.Background()) }
	p.serving = dispatch.NewServing(dispatch.NewGen(nil, map[string]*view.View{}, dispatch.Access{}, p.obs))
	p.d = dispatch.New(dispatch.Options{
		Log:        log,
		ServerInfo: &mcp.Implementation{Name: "switchboard", Version: Version},
		Redactor:   redactor,
		Serving:    p.serving,
		Rebuild:    p.rebuild,
		NewClient:  p.newHandle,
		Resumable:  p.parked.Wrap,
		TaskKey:    p.parked.Key,
		Started:    p.started,
		Activity:   p.activity,
		OneClient:  o.Stdio,
	})
	if p.edge, err = edge.New(edge.Options{Log: log, Serving: p.serving, Sessions: p.d, Replica: o.Replica, Getenv: getenv, Consents: p.consents}); err != nil {
		tel.Close(context.Background())
		audit.Close()
		return nil, nil, &ConfigError{err}
	}
	return p, c, nil
}

// Run loads the config, starts every upstream, serves until ctx is done,
// then shuts down gracefully.
func Run(ctx context.Context, o Options) error {
	p, c, err := New(o)
	if err != nil {
		return err
	}
	return p.Serve(ctx, c)
}

// Serve starts the upstreams of c and serves until ctx is done.
func (p *Proxy) Serve(ctx context.Context, c *config.Config) error {
	ln, adm, err := p.listen(c)
	if err != nil {
		return err
	}
	p.noteAddrs(ln, adm)
	gogc, memlimit := gctune.Settings()
	p.log.Info("starting", "version", Version, "config", p.configName(), "addr", p.listenAddr, "admin", p.adminAddr,
		"servers", len(c.ServerNames()), "gomaxprocs", runtime.GOMAXPROCS(0), "sysmon", sysmon.Mode(os.Getenv), "gogc", gogc, "memlimit", memlimit)
	logNotes(p.log, c)
	if err := p.apply(ctx, c, nil); err != nil {
		for _, l := range []net.Listener{ln, adm} {
			if l != nil {
				l.Close()
			}
		}
		return err
	}
	rctx, stopReload := context.WithCancel(ctx)
	p.startReloading(rctx)
	hs := p.handleList()
	p.bg.Go(func() { gctune.ReleaseStartupMemory(rctx, func(ctx context.Context) { waitFirstAttempts(ctx, hs) }) })
	p.bg.Go(func() { gctune.ReleaseWhenIdle(rctx) })

	read := c.ReadTimeout()
	adminSrv := &http.Server{Handler: admin.Handler(adminBackend{p}), ReadHeaderTimeout: read, ReadTimeout: read, IdleTimeout: idleConnTimeout}
	errc := make(chan error, 2)
	if adm != nil {
		go func() { errc <- adminSrv.Serve(adm) }()
	}
	unregister := p.register()
	var (
		srv      *http.Server
		serveErr error
	)
	if p.opts.Stdio {
		p.writeReady()
		serveErr = p.serveStdio(ctx)
	} else {
		srv = &http.Server{Handler: p.edge.Handler(), ReadHeaderTimeout: read, IdleTimeout: idleConnTimeout,
			ErrorLog: p.log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug})}
		go func() { errc <- srv.Serve(ln) }()
		p.writeReady()
		select {
		case <-ctx.Done():
		case serveErr = <-errc:
		}
		if errors.Is(serveErr, http.ErrServerClosed) {
			serveErr = nil
		}
	}
	p.shutdown(srv, adminSrv, stopReload, unregister)
	return serveErr
}

// shutdown stops switchboard in this order; every step that waits is
// bounded by one deadline, shutdownTimeout from its start.
//
//  1. /readyz turns 503 and the reload loop stops: no config applies from
//     here, and background work (a reload's retiring servers) is cut to
//     the deadline.
//  2. The listener stops taking connections, and no retry of a 2026-07-28
//     call that waits for its client's input gets in: those calls end.
//  3. POSTs in flight finish, then the requests answered on a stream
//     (legacy SSE, stdio); then every session ends.
//  4. The listeners close and the instance file goes.
//  5. Upstreams stop, per-client ones first, their calls cut at the
//     deadline.
//  6. What is left closes: parked calls, the secret resolvers, the pin
//     file (its last changes written), telemetry (flushed within 5 s)
//     and the audit log.
func (p *Proxy) shutdown(srv, adminSrv *http.Server, stopReload, unregister func()) {
	p.log.Info("shutting down")
	stopBy := time.Now().Add(p.serving.Load().Snap.Config.ShutdownTimeout())
	sctx, cancel := context.WithDeadline(context.Background(), stopBy)
	defer cancel()

	// 1.
	p.stopping.Store(true)
	stopReload()
	cut := time.AfterFunc(time.Until(stopBy), p.cutBackground)
	defer cut.Stop()
	// 2.
	if srv != nil {
		go func() { _ = srv.Shutdown(sctx) }()
	}
	p.parked.StopAsking()
	// 3.
	p.edge.Drain(sctx)
	p.closeSessions(sctx, srv != nil)
	// 4.
	p.edge.Close()
	if srv != nil {
		_ = srv.Close()
	}
	_ = adminSrv.Close()
	unregister()
	// 5. and 6.
	p.closeAllBy(stopBy)
	// The in-band consents still waiting end; their callers' sessions
	// and servers are closed already, so telling them waits for nothing.
	p.consents.Close()
}

// closeSessions lets every downstream session's requests in flight finish
// (until ctx is done), then closes the sessions; with streams (HTTP), it
// lingers before that (streamLinger).
func (p *Proxy) closeSessions(ctx context.Context, streams bool) {
	var all []*session.Session
	p.d.EachSession(func(ss *session.Session, _ string) { all = append(all, ss) })
	var wg sync.WaitGroup
	for _, ss := range all {
		wg.Go(func() { _ = ss.Drain(ctx) })
	}
	wg.Wait()
	if streams {
		p.linger(ctx)
	}
	for _, ss := range all {
		ss.Close()
	}
}

// streamLinger is how long the streams of drained sessions stay open at
// shutdown, at most, before they end: answers are written by then, but a
// client reads its streams concurrently, and some (the go-sdk's among
// them) fail the calls they have not taken yet when a stream ends.
const streamLinger = time.Second

// linger waits streamLinger, or less when every client ended its session
// itself, or until ctx is done.
func (p *Proxy) linger(ctx context.Context) {
	t := time.NewTimer(streamLinger)
	defer t.Stop()
	for {
		n := 0
		p.d.EachSession(func(*session.Session, string) { n++ })
		if n == 0 {
			return
		}
		select {
		case <-t.C:
			return
		case <-ctx.Done():
			return
		case <-p.d.SessionGone():
		}
	}
}

// serveStdio serves the one client on stdin/stdout until its input ends
// or ctx is done; shutdown lets its requests in flight finish.
func (p *Proxy) serveStdio(ctx context.Context) error {
	stdin, stdout := p.opts.Stdin, p.opts.Stdout
	if stdin == nil {
		stdin = os.Stdin
	}
	if stdout == nil {
		stdout = os.Stdout
	}
	ss, err := p.d.Open(dispatch.Principal{}, "", nil, nil)
	if err != nil {
		return err
	}
	// The requests outlive ctx by the shutdown grace: they keep its
	// values, not its end.
	err = stdio.Serve(ctx, ss, stdin, stdout, p.log.Named("stdio"))
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// handleList returns the shared handles: those served, and those a reload
// started that do not serve yet.
func (p *Proxy) handleList() []*upstream.Handle {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hs.all()
}

// closeAll stops every upstream in parallel, letting calls in flight finish
// for up to 10 s.
func (p *Proxy) closeAll() { p.closeAllBy(time.Time{}) }

// closeAllBy stops every upstream in parallel; calls in flight may finish
// until deadline (zero: 10 s from now).
func (p *Proxy) closeAllBy(deadline time.Time) {
	if deadline.IsZero() {
		deadline = time.Now().Add(10 * time.Second)
	}
	p.bg.Wait()
	p.d.CloseClients(nil)
	p.mu.Lock()
	if j := p.hs.next; j != nil {
		// A reload still waiting for its starts: what it built goes.
		p.hs.next = nil
		j.obs.discard()
	}
	p.mu.Unlock()
	hs := p.handleList()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = h.Close(ctx)
		}()
	}
	wg.Wait()
	// Calls still waiting for a 2026-07-28 client's input end with their
	// upstreams, or now.
	p.parked.Close()
	_ = p.resolver.Close()
	p.pins.Flush() // pins learned since the last batched write
	tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer tcancel()
	p.obs.Tel.Close(tctx)
	p.obs.Audit.Close()
	p.log.Info("stopped")
}

func writeFileAtomic(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ready-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// gcpEndpointEnv names the GCP Secret Manager endpoint to use instead of
// the global one: a regional endpoint, or a Private Service Connect
// address (docs/config.md). AWS has its SDK's own variable,
// AWS_ENDPOINT_URL_SECRETS_MANAGER.
const gcpEndpointEnv = "SWITCHBOARD_GCP_SECRETMANAGER_ENDPOINT"

// upstreamSecrets is the resolver as upstreams expand their references
// with it: a reference that does not resolve (secrets.ErrNotFound: an
// unset variable, a missing file, no such secret) would not resolve at the
// next attempt either, so it fails the server's start for good
// (upstream.ErrPermanent); a reload or restart tries again.
type upstreamSecrets struct{ r *secrets.Resolver }

func (u upstreamSecrets) Expand(ctx context.Context, value string) (string, error) {
	v, err := u.r.Expand(ctx, value)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", upstream.Permanent(err)
	}
	return v, err
}

// resolverOptions configures secret resolution from the standard
// environment (VAULT_*, GOOGLE_*, AWS_*) and gcpEndpointEnv.
func resolverOptions(redactor *secrets.Set) secrets.Options {
	o := secrets.Options{Redact: redactor}
	if ep := os.Getenv(gcpEndpointEnv); ep != "" {
		o.GCP = &secrets.GCPOptions{Endpoint: ep}
	}
	return o
}
