package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sony/gobreaker/v2"
)

// State is where a Handle's supervisor is.
type State string

// States of a Handle.
const (
	StateIdle       State = "idle"       // lazy, not started yet
	StateStarting   State = "starting"   // first attempt in progress
	StateReady      State = "ready"      // session up, catalog listed
	StateRestarting State = "restarting" // session lost; waiting or retrying with backoff
	StateFailed     State = "failed"     // gave up (stdio) or retrying slowly with tools withdrawn (remote)
	StateStopped    State = "stopped"    // closed
)

// Expander resolves references (secret://…, ${NAME}) in one config value.
// It is called at every start, so rotated values are picked up. It must be
// safe for concurrent use.
type Expander interface {
	Expand(ctx context.Context, value string) (string, error)
}

// Options are shared by every Handle of a proxy.
type Options struct {
	// Logger is the parent logger; the Handle logs under Named(spec.Name).
	// If nil, logs are discarded.
	Logger hclog.Logger
	// SDKLogger receives the go-sdk's own logs. If nil, they are discarded.
	SDKLogger *slog.Logger
	// Expander resolves references in env, args, headers and URL. If nil,
	// values are used as written.
	Expander Expander
	// OnChange is called after the catalog or the state changed. It runs on
	// the supervisor's goroutine and must not block for long.
	OnChange func(*Handle)
	// ClientInfo names switchboard to upstreams. If nil, "switchboard".
	ClientInfo *mcp.Implementation
}

// Catalog is what an upstream offers, listed through all pages. It is
// immutable once published.
type Catalog struct {
	Tools     []*mcp.Tool
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
}

// Status is a point-in-time view of a Handle for /status.
type Status struct {
	Name        string    `json:"name"`
	Transport   string    `json:"transport"`
	State       State     `json:"state"`
	PID         int       `json:"pid,omitempty"`
	Protocol    string    `json:"protocol,omitempty"`
	Restarts    int       `json:"restarts"`
	Failures    int       `json:"consecutiveFailures"`
	LastError   string    `json:"lastError,omitempty"`
	Since       time.Time `json:"since"`
	UpSince     time.Time `json:"upSince,omitzero"`
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
	Breaker     string    `json:"breaker"`
	Tools       int       `json:"tools"`
	Prompts     int       `json:"prompts"`
	Resources   int       `json:"resources"`
	InFlight    int64     `json:"inFlight"`
}

// backoffBase is the first restart delay; it doubles up to backoffMax.
var (
	backoffBase   = time.Second
	backoffMax    = 30 * time.Second
	stableRunTime = 5 * time.Minute // a run this long resets the failure count
)

// Handle supervises one upstream MCP server: it connects, lists, restarts
// with backoff, and forwards calls through a circuit breaker. Handle is safe
// for concurrent use.
type Handle struct {
	spec Spec
	opt  Options
	log  hclog.Logger

	ctx    context.Context // supervisor lifetime
	cancel context.CancelFunc
	wg     sync.WaitGroup

	startOnce sync.Once
	closeOnce sync.Once
	firstDone chan struct{} // closed when the first start attempt finished
	firstOnce sync.Once

	sess    atomic.Pointer[session]
	catalog atomic.Pointer[Catalog]
	resync  chan struct{}

	breaker    *gobreaker.CircuitBreaker[any]
	breakerTTL atomic.Int64 // unix nanos when an open breaker half-opens

	inflight atomic.Int64
	closing  atomic.Bool
	drained  chan struct{}

	mu          sync.Mutex
	state       State
	since       time.Time
	upSince     time.Time
	changed     chan struct{} // closed and replaced at every state change
	lastErr     string
	restarts    int
	failures    int
	nextAttempt time.Time
	pid         int
	protocol    string
}

type session struct {
	cs     *mcp.ClientSession
	proc   *stdioConn // nil for remote servers
	stderr *lineWriter
}

// New returns a Handle for spec. It does nothing until Start.
func New(spec Spec, opt Options) *Handle {
	if opt.Logger == nil {
		opt.Logger = hclog.NewNullLogger()
	}
	if opt.SDKLogger == nil {
		opt.SDKLogger = slog.New(slog.DiscardHandler)
	}
	if opt.ClientInfo == nil {
		opt.ClientInfo = &mcp.Implementation{Name: "switchboard"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handle{
		spec:      spec,
		opt:       opt,
		log:       opt.Logger.Named(spec.Name),
		ctx:       ctx,
		cancel:    cancel,
		firstDone: make(chan struct{}),
		resync:    make(chan struct{}, 1),
		drained:   make(chan struct{}, 1),
		state:     StateIdle,
		since:     time.Now(),
		changed:   make(chan struct{}),
	}
	h.breaker = h.newBreaker()
	return h
}

// Spec returns the spec the Handle runs.
func (h *Handle) Spec() Spec { return h.spec }

// Name returns the server's config key.
func (h *Handle) Name() string { return h.spec.Name }

// Start begins supervising an eager server; a lazy one waits for its first
// use. Start never blocks and may be called more than once.
func (h *Handle) Start() {
	if h.spec.Lazy {
		h.finishFirst()
		return
	}
	h.ensureStarted()
}

func (h *Handle) ensureStarted() {
	h.startOnce.Do(func() {
		if h.ctx.Err() != nil {
			return
		}
		h.setState(StateStarting, "")
		h.wg.Add(1)
		go h.run()
	})
}

func (h *Handle) finishFirst() { h.firstOnce.Do(func() { close(h.firstDone) }) }

// FirstAttempt is closed once the first start attempt finished, successful
// or not (immediately for lazy servers).
func (h *Handle) FirstAttempt() <-chan struct{} { return h.firstDone }

// Catalog returns the catalog to expose, or nil when the server's tools
// must not be listed (never started, failed, stopped). While restarting, the
// last catalog stays listed.
func (h *Handle) Catalog() *Catalog { return h.catalog.Load() }

// Status reports the Handle's current state.
func (h *Handle) Status() Status {
	h.mu.Lock()
	st := Status{
		Name: h.spec.Name, Transport: h.spec.Transport, State: h.state, PID: h.pid,
		Protocol: h.protocol, Restarts: h.restarts, Failures: h.failures, LastError: h.lastErr,
		Since: h.since, UpSince: h.upSince, NextAttempt: h.nextAttempt,
	}
	h.mu.Unlock()
	st.Breaker = h.breaker.State().String()
	st.InFlight = h.inflight.Load()
	if c := h.catalog.Load(); c != nil {
		st.Tools, st.Prompts, st.Resources = len(c.Tools), len(c.Prompts), len(c.Resources)
	}
	return st
}

// Close stops accepting calls, waits for in-flight ones until ctx is done,
// then stops the server (for stdio: close stdin, SIGTERM and SIGKILL to the
// process group). Close is idempotent and safe for concurrent use; every
// call waits until the server is stopped.
func (h *Handle) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		h.closing.Store(true)
		for h.inflight.Load() > 0 {
			select {
			case <-h.drained:
			case <-ctx.Done():
				h.log.Warn("drain cut short", "state", "in_flight", "count", h.inflight.Load())
				goto stop
			case <-time.After(50 * time.Millisecond):
			}
		}
	stop:
		h.cancel()
		h.wg.Wait()
		h.catalog.Store(nil)
		h.setState(StateStopped, "")
		h.finishFirst()
	})
	h.wg.Wait()
	return nil
}

func (h *Handle) acquire() bool {
	h.inflight.Add(1)
	if h.closing.Load() {
		h.release()
		return false
	}
	return true
}

func (h *Handle) release() {
	if h.inflight.Add(-1) == 0 && h.closing.Load() {
		select {
		case h.drained <- struct{}{}:
		default:
		}
	}
}

func (h *Handle) setState(s State, lastErr string) {
	h.mu.Lock()
	if s != h.state {
		h.state = s
		h.since = time.Now()
	}
	if lastErr != "" {
		h.lastErr = lastErr
	}
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	if h.opt.OnChange != nil {
		h.opt.OnChange(h)
	}
}

// run is the supervisor loop. It owns the session and is the only writer of
// h.sess and h.catalog while the Handle is open.
func (h *Handle) run() {
	defer h.wg.Done()
	first := true
	for h.ctx.Err() == nil {
		s, cat, err := h.connect(h.ctx)
		if err != nil {
			if h.ctx.Err() != nil {
				break
			}
			if !h.retry(err, first) {
				break
			}
			first = false
			continue
		}
		first = false
		h.publish(s, cat)
		h.finishFirst()
		started := time.Now()
		werr := h.serve(s)
		h.sess.Store(nil)
		s.close()
		if h.ctx.Err() != nil {
			break
		}
		if time.Since(started) >= stableRunTime {
			h.mu.Lock()
			h.failures = 0
			h.mu.Unlock()
		}
		if werr == nil {
			werr = errors.New("session closed")
		}
		h.log.Warn("upstream session ended", "error", werr)
		if !h.retry(werr, false) {
			break
		}
	}
	h.finishFirst()
}

// retry records a failed attempt and sleeps the backoff. It returns false
// when the server must give up.
func (h *Handle) retry(err error, first bool) bool {
	h.mu.Lock()
	h.failures++
	n := h.failures
	h.pid = 0
	h.mu.Unlock()
	remote := h.spec.Transport != TransportStdio
	giveUp := !h.spec.RestartOnCrash || n > h.spec.MaxRestarts
	if first {
		h.finishFirst()
	}
	if giveUp && !remote {
		h.catalog.Store(nil)
		h.log.Error("upstream failed", "error", err, "attempt", n)
		h.setState(StateFailed, err.Error())
		return false
	}
	wait := backoff(n)
	h.mu.Lock()
	h.nextAttempt = time.Now().Add(wait)
	h.restarts++
	h.mu.Unlock()
	if giveUp {
		// A remote server is never given up on: it may come back at any
		// time. Its tools leave the list until it does.
		h.catalog.Store(nil)
		wait = backoffMax
		h.mu.Lock()
		h.nextAttempt = time.Now().Add(wait)
		h.mu.Unlock()
		h.log.Warn("upstream unreachable", "error", err, "attempt", n, "duration", wait)
		h.setState(StateFailed, err.Error())
	} else {
		h.log.Warn("upstream restart", "error", err, "attempt", n, "duration", wait)
		h.setState(StateRestarting, err.Error())
	}
	select {
	case <-h.ctx.Done():
		return false
	case <-time.After(wait):
		return true
	}
}

// backoff returns the delay before attempt n (1-based): 1, 2, 4, 8, 16, then
// 30 seconds, each ±10 %.
func backoff(n int) time.Duration {
	d := backoffMax
	if n < 8 {
		d = min(backoffBase<<(n-1), backoffMax)
	}
	jitter := (rand.Float64()*0.2 - 0.1) * float64(d)
	return d + time.Duration(jitter)
}

func (h *Handle) publish(s *session, cat *Catalog) {
	h.catalog.Store(cat)
	h.sess.Store(s)
	h.mu.Lock()
	h.pid = s.proc.pid()
	h.upSince = time.Now()
	h.nextAttempt = time.Time{}
	if ir := s.cs.InitializeResult(); ir != nil {
		h.protocol = ir.ProtocolVersion
	}
	h.mu.Unlock()
	h.log.Info("upstream ready", "tools", len(cat.Tools), "prompts", len(cat.Prompts), "resources", len(cat.Resources))
	h.setState(StateReady, "")
}

// serve waits for the session to end, re-listing the catalog whenever the
// upstream says it changed. It returns the session's end error, or nil when
// the Handle is closing.
func (h *Handle) serve(s *session) error {
	ended := make(chan error, 1)
	go func() { ended <- s.cs.Wait() }()
	for {
		select {
		case err := <-ended:
			return err
		case <-h.ctx.Done():
			return nil
		case <-h.resync:
			ctx, cancel := context.WithTimeout(h.ctx, h.spec.connectTimeout())
			cat, err := listCatalog(ctx, s.cs)
			cancel()
			if err != nil {
				h.log.Warn("upstream relist", "error", err)
				continue
			}
			h.catalog.Store(cat)
			h.log.Debug("upstream catalog changed", "tools", len(cat.Tools))
			if h.opt.OnChange != nil {
				h.opt.OnChange(h)
			}
		}
	}
}

func (h *Handle) requestResync() {
	select {
	case h.resync <- struct{}{}:
	default:
	}
}

// connect starts the server (resolving references first), initializes the
// session and lists the catalog, all within the connect timeout.
func (h *Handle) connect(parent context.Context) (*session, *Catalog, error) {
	ctx, cancel := context.WithTimeout(parent, h.spec.connectTimeout())
	defer cancel()

	client := mcp.NewClient(h.opt.ClientInfo, &mcp.ClientOptions{
		Logger:                     h.opt.SDKLogger,
		Capabilities:               &mcp.ClientCapabilities{},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { h.requestResync() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { h.requestResync() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { h.requestResync() },
	})
	opts := &mcp.ClientSessionOptions{ProtocolVersion: h.spec.protocolVersion()}
	s := &session{stderr: newLineWriter(h.log)}

	var (
		t   mcp.Transport
		err error
	)
	switch h.spec.Transport {
	case TransportStdio:
		env, args, err := h.expandStdio(ctx)
		if err != nil {
			return nil, nil, err
		}
		t, s.proc, err = stdioTransport(ctx, h.spec, env, args, s.stderr)
		if err != nil {
			return nil, nil, err
		}
	default:
		url, headers, err := h.expandRemote(ctx)
		if err != nil {
			return nil, nil, err
		}
		t = remoteTransport(h.spec, url, headers)
	}

	if h.spec.Transport == TransportSSE {
		s.cs, err = connectDetached(ctx, client, t, opts)
	} else {
		s.cs, err = client.Connect(ctx, t, opts)
	}
	if err != nil {
		if s.proc != nil {
			s.proc.reapGroup()
		}
		s.stderr.Flush()
		return nil, nil, fmt.Errorf("connect: %w", timeoutCause(ctx, err))
	}
	cat, err := listCatalog(ctx, s.cs)
	if err != nil {
		s.close()
		return nil, nil, fmt.Errorf("list: %w", timeoutCause(ctx, err))
	}
	return s, cat, nil
}

// connectDetached connects an SSE transport. The SDK binds the SSE stream to
// the Connect context, so a deadline there would end the session later; the
// deadline is enforced here instead.
func connectDetached(ctx context.Context, c *mcp.Client, t mcp.Transport, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, error) {
	type result struct {
		cs  *mcp.ClientSession
		err error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := c.Connect(context.WithoutCancel(ctx), t, opts)
		done <- result{cs, err}
	}()
	select {
	case r := <-done:
		return r.cs, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.cs != nil {
				_ = r.cs.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

func timeoutCause(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within the connect timeout: %w", err)
	}
	return err
}

func (h *Handle) expand(ctx context.Context, v string) (string, error) {
	if h.opt.Expander == nil {
		return v, nil
	}
	return h.opt.Expander.Expand(ctx, v)
}

func (h *Handle) expandStdio(ctx context.Context) (map[string]string, []string, error) {
	var errs []error
	env := make(map[string]string, len(h.spec.Env))
	for k, v := range h.spec.Env {
		x, err := h.expand(ctx, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("env %s: %w", k, err))
			continue
		}
		env[k] = x
	}
	args := make([]string, len(h.spec.Args))
	for i, a := range h.spec.Args {
		x, err := h.expand(ctx, a)
		if err != nil {
			errs = append(errs, fmt.Errorf("args[%d]: %w", i, err))
			continue
		}
		args[i] = x
	}
	return env, args, errors.Join(errs...)
}

func (h *Handle) expandRemote(ctx context.Context) (string, map[string]string, error) {
	var errs []error
	url, err := h.expand(ctx, h.spec.URL)
	if err != nil {
		errs = append(errs, fmt.Errorf("url: %w", err))
	}
	headers := make(map[string]string, len(h.spec.Headers))
	for k, v := range h.spec.Headers {
		x, err := h.expand(ctx, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("headers %s: %w", k, err))
			continue
		}
		headers[k] = x
	}
	return url, headers, errors.Join(errs...)
}

// close ends the session: the SDK closes stdin and waits while escalate
// signals the process group; whatever is left of the group is then killed.
func (s *session) close() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	if s.proc != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.proc.escalate(done)
		}()
	}
	_ = s.cs.Close()
	close(done)
	wg.Wait()
	if s.proc != nil {
		s.proc.reapGroup()
	}
	s.stderr.Flush()
}

// listCatalog lists everything the server advertises, following every page.
func listCatalog(ctx context.Context, cs *mcp.ClientSession) (*Catalog, error) {
	var caps *mcp.ServerCapabilities
	if ir := cs.InitializeResult(); ir != nil {
		caps = ir.Capabilities
	}
	cat := &Catalog{}
	if caps == nil || caps.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("tools/list: %w", err)
			}
			cat.Tools = append(cat.Tools, t)
		}
	}
	if caps != nil && caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("prompts/list: %w", err)
			}
			cat.Prompts = append(cat.Prompts, p)
		}
	}
	if caps != nil && caps.Resources != nil {
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("resources/list: %w", err)
			}
			cat.Resources = append(cat.Resources, r)
		}
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				// Templates are optional in practice; some servers answer
				// method-not-found.
				break
			}
			cat.Templates = append(cat.Templates, r)
		}
	}
	return cat, nil
}
