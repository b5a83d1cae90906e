package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// State is where a Handle's supervisor is.
type State string

// States of a Handle.
const (
	StateIdle       State = "idle"       // lazy, not running: not started yet, or stopped after its idle timeout
	StateStarting   State = "starting"   // first attempt in progress
	StateReady      State = "ready"      // session up, catalog listed
	StateRestarting State = "restarting" // session lost; waiting or retrying with backoff
	StateFailed     State = "failed"     // gave up (stdio, or a start that failed for good: ErrPermanent) or retrying slowly with tools withdrawn (remote)
	StateStopped    State = "stopped"    // closed
)

// Expander resolves references (secret://…, ${NAME}) in one config value.
// It is called at every start, so rotated values are picked up. An error
// that matches ErrPermanent (see Permanent), such as a reference that does
// not resolve, fails the server without restarts. It must be safe for
// concurrent use.
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
	// Peer receives upstream notifications and server→client requests. If
	// nil, notifications are dropped and switchboard advertises no client
	// capabilities (sampling, elicitation, roots) upstream.
	Peer Peer
	// RedactLines, if set, redacts the lines a child writes to stderr (and
	// non-JSON-RPC stdout) before they are logged or kept: given two
	// consecutive lines it returns them redacted as one text, so that a
	// secret printed across two lines is caught (see secrets.Set.
	// RedactJoined). A line is then logged once the next one arrived, or
	// 50 ms after it, and cut to its length limit after redaction.
	RedactLines func(lines []string) []string
	// TokenStore gives the store of a server's OAuth tokens (Spec.OAuth).
	// If nil, tokens are kept in memory only.
	TokenStore func(ctx context.Context, c *oauth.Config) (oauth.Store, error)
	// Redact, if set, is told every OAuth token and secret a server's
	// handler meets, so that nothing shows it.
	Redact func(string)
	// Consents, if set, holds the in-band consent flows of every
	// authorization_code server whose redirect URI is switchboard's own
	// callback (oauth.CallbackPath).
	Consents *oauth.Consents
	// OneClient says the server has one downstream client (`serve
	// --stdio`): like a per-client instance (Spec.ClientRoots), it is
	// offered that client's roots, unless Spec.Roots configures its own.
	OneClient bool
}

// Status is a point-in-time view of a Handle for /status.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     State  `json:"state"`
	Lazy      bool   `json:"lazy,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Protocol  string `json:"protocol,omitempty"`
	// Restarts counts every restart or reconnect attempt since the Handle
	// was created; Failures counts the current run of consecutive failed
	// starts (zero after a healthy run; see supervisor.ended).
	Restarts  int       `json:"restarts"`
	Failures  int       `json:"consecutiveFailures"`
	LastError string    `json:"lastError,omitempty"` // unredacted: the caller redacts
	Since     time.Time `json:"since"`               // when State was entered
	UpSince   time.Time `json:"upSince,omitzero"`    // when the current session became ready
	// Uptime is how long the current session has been ready, in seconds;
	// zero unless State is ready.
	Uptime      float64   `json:"uptimeSeconds"`
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
	Breaker     string    `json:"breaker"`
	// BreakerProbe is when an open breaker lets the next call through as
	// a probe; zero unless the breaker is open.
	BreakerProbe time.Time `json:"breakerProbe,omitzero"`
	Tools        int       `json:"tools"`
	Prompts      int       `json:"prompts"`
	Resources    int       `json:"resources"`
	InFlight     int64     `json:"inFlight"`
	// Instances counts the instances a server with isolation: per-client
	// runs for its sessions now (each its own process or upstream
	// session), and InFlight then counts their calls too; nil for other
	// servers. The proxy, which starts them, fills it in.
	Instances *int `json:"instances,omitempty"`
	// Catalog is CatalogComplete or CatalogPartial while a catalog is
	// listed, else "". CatalogErrors is the catalog's Errors (unredacted:
	// the caller redacts), and CatalogRetry when the failing lists are
	// asked for again; zero unless the catalog is partial and the session
	// is up.
	Catalog       string            `json:"catalog,omitempty"`
	CatalogErrors map[string]string `json:"catalogErrors,omitempty"`
	// CatalogCached is true while the catalog is the one Seed gave (the
	// last run's, from disk) and the server has not listed its own yet.
	CatalogCached bool      `json:"catalogCached,omitempty"`
	CatalogRetry  time.Time `json:"catalogRetry,omitzero"`
	// ListFailures counts, by method, every failed listing of a list other
	// than tools/list since the Handle was created.
	ListFailures map[string]int `json:"listFailures,omitempty"`
	// StderrTail is the last lines the server wrote to stderr (stdio
	// servers; at most 20, across restarts), oldest first. Unredacted: the
	// caller redacts.
	StderrTail []string `json:"stderrTail,omitempty"`
	// StrayAnswers counts the answers the server sent to no call in
	// flight (an ID switchboard never sent, or a second answer to one
	// call) since the Handle was created; each was dropped.
	StrayAnswers int64 `json:"strayAnswers,omitempty"`
}

// backoffBase is the first restart delay; it doubles up to backoffMax.
var (
	backoffBase = time.Second
	backoffMax  = 30 * time.Second
)

// healthyRunTime is how long a session that answered no call must have been
// ready for its end to be the crash of a healthy run, not a failed start
// (see supervisor.ended). Ten default first delays: a server that dies this
// soon after initialize without serving anything is in a crash loop as
// surely as one that dies during it (a background connection it opens after
// initialize that fails, a bad config it reads late), while one killed from
// outside at most every 10 s (OOM, an operator, a chaos test) spends about
// nine tenths of its time up and is worth restarting for ever.
const healthyRunTime = 10 * time.Second

// Handle supervises one upstream MCP server: it connects, lists, restarts
// with backoff, and forwards calls through a circuit breaker. Handle is safe
// for concurrent use. It is made of parts that each own their state: the
// supervisor (start, restart, backoff, idle stop), the connector, the
// catalog, the live session, and the calls (in flight, breaker).
type Handle struct {
	spec atomic.Pointer[Spec] // the settings; see Update
	opt  Options
	log  hclog.Logger

	life      lifetime
	closeOnce sync.Once

	sup   supervisor
	conn  connector
	cat   catalogStore
	sess  sessionSlot // the live session, and what a new one is told again
	calls calls
	// strays counts the server's answers to no call in flight, across
	// its connections.
	strays strayAnswers
}

// lifetime is a Handle's: Close cancels ctx, which ends the supervisor
// loop and cuts calls short, and waits for the goroutines in wg.
type lifetime struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
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
	log := opt.Logger.Named(spec.Name)
	h := &Handle{
		opt:  opt,
		log:  log,
		cat:  newCatalogStore(log),
		sess: sessionSlot{log: log},
	}
	h.life.ctx, h.life.cancel = context.WithCancel(context.Background())
	h.strays.log = log
	h.spec.Store(&spec)
	h.calls = calls{spec: &h.spec, log: log, life: &h.life, sess: &h.sess, sup: &h.sup, brk: breaker{log: log}}
	h.calls.brk.reset(&spec)
	h.conn = connector{
		spec: &h.spec, log: log, expander: opt.Expander, redact: opt.RedactLines, info: opt.ClientInfo,
		peered: opt.Peer != nil, oneClient: opt.OneClient, hooks: h.hooks(), cat: &h.cat, sess: &h.sess,
		auth: authSlot{store: opt.TokenStore, redact: opt.Redact, consents: opt.Consents},
	}
	h.sup = newSupervisor(&h.spec, log, &h.life)
	h.sup.onChange = func() {
		if opt.OnChange != nil {
			opt.OnChange(h)
		}
	}
	h.sup.conn = &h.conn
	h.sup.cat = &h.cat
	h.sup.sess = &h.sess
	h.sup.brk = &h.calls.brk
	h.sup.gate = &h.calls.gate
	return h
}

// Spec returns the spec the Handle runs.
func (h *Handle) Spec() Spec { return *h.sp() }

// AsksConsent reports whether the server's token may need a person's
// consent (oauth grant authorization_code), which a call can be asked
// for in band (oauth.WithAsking).
func (h *Handle) AsksConsent() bool {
	o := h.sp().OAuth
	return o != nil && o.Grant == oauth.GrantAuthorizationCode
}

// sp is the current spec; see Update.
func (h *Handle) sp() *Spec { return h.spec.Load() }

// Update applies a spec with the same Fingerprint in place: the process or
// session stays. Timeouts, the restart policy and backoff apply from the
// next call or attempt, and a changed idle timeout at once; changed breaker
// settings start a fresh breaker (closed); a server that stops being lazy
// starts now.
func (h *Handle) Update(spec Spec) error {
	old := h.sp()
	if spec.Fingerprint() != old.Fingerprint() {
		return fmt.Errorf("upstream %s: update changes how the server is started or reached; it needs a new Handle", old.Name)
	}
	h.spec.Store(&spec)
	if spec.BreakerFailures != old.BreakerFailures || spec.BreakerOpen != old.BreakerOpen {
		h.calls.brk.reset(&spec)
	}
	if old.Lazy && !spec.Lazy {
		h.sup.ensureStarted()
	}
	if spec.idleTimeout() != old.idleTimeout() {
		h.sup.kickIdle()
	}
	if spec.SkipPrompts != old.SkipPrompts || spec.SkipResources != old.SkipResources {
		h.cat.requestResync()
	}
	return nil
}

// Name returns the server's config key.
func (h *Handle) Name() string { return h.sp().Name }

// Start begins supervising an eager server; a lazy one waits for its first
// use (a call, or a tools/list through Warm). Start never blocks and may be
// called more than once.
func (h *Handle) Start() {
	if h.sp().Lazy {
		h.sup.finishFirst()
		return
	}
	h.sup.ensureStarted()
}

// Restart brings the server back now, with its failure count reset: a
// stdio server that gave up starts again, one waiting for its next attempt
// tries at once, and a running one has its session ended and starts anew.
// It reports false, doing nothing, for a Handle that is closing or a lazy
// server that never started.
func (h *Handle) Restart() bool { return h.sup.restart() }

// Warm prepares a tools/list. For an eager server, or a lazy one that
// already started, it does nothing. A lazy server that has not started yet
// is started; with LazyList "start" (the default) Warm then waits until the
// first attempt finished (ready or not), bounded by ctx and the connect
// timeout, so the listing can include its tools; with "cached" it returns at
// once and the tools arrive with the next catalog change. A server that
// has a catalog (it went idle after its idle timeout, or was seeded from
// disk) is not started nor waited for: its catalog is listed. Warm reports whether the server was idle or still starting, in
// which case the caller's view of the catalog may be stale. It is safe for
// concurrent use.
func (h *Handle) Warm(ctx context.Context) bool {
	if !h.sp().Lazy {
		return false
	}
	if st := h.sup.current(); st != StateIdle && st != StateStarting || h.cat.load() != nil {
		return false
	}
	if h.sp().LazyList == LazyListCached {
		h.sup.ensureStarted()
		return true
	}
	h.Await(ctx)
	return true
}

// FirstAttempt is closed once the first start attempt finished, successful
// or not (immediately for lazy servers).
func (h *Handle) FirstAttempt() <-chan struct{} { return h.sup.firstDone }

// Catalog returns the catalog to expose, or nil when the server's tools
// must not be listed (never started, failed, stopped). While restarting, the
// last catalog stays listed.
func (h *Handle) Catalog() *Catalog { return h.cat.load() }

// Seed gives a Handle that has no catalog yet the one its server listed in
// an earlier run, and the protocol version it spoke then, so that its tools
// can be listed (and called: a call waits for the start) before the server
// is up, and a server found to be of an earlier era than 2026-07-28 is not
// probed again (a failed connect probes anew). The server's own listing
// replaces the catalog; a start that fails for good withdraws it as it
// would the server's. Seed does nothing once a catalog is there.
func (h *Handle) Seed(cat *Catalog, protocol string) {
	if !h.cat.seed(cat) {
		return
	}
	if protocol != "" && protocol != Modern {
		h.conn.knownLegacy()
	}
}

// Listed reports whether the catalog is the server's own listing of this
// run, not a seed nor none.
func (h *Handle) Listed() bool {
	return h.cat.listed()
}

// Await starts a server that is idle (a lazy one never started, or
// stopped after its idle timeout) and waits, bounded by its connect
// timeout and ctx, until it is no longer idle or starting. It reports
// whether the server is ready.
func (h *Handle) Await(ctx context.Context) bool { return h.sup.await(ctx) }

// Status reports the Handle's current state.
func (h *Handle) Status() Status {
	now := time.Now()
	st := Status{Name: h.sp().Name, Transport: h.conn.transportName(), Lazy: h.sp().Lazy}
	h.sup.status(&st)
	if st.State == StateReady && !st.UpSince.IsZero() {
		st.Uptime = now.Sub(st.UpSince).Round(time.Millisecond).Seconds()
	}
	st.Breaker, st.BreakerProbe = h.calls.brk.status()
	st.InFlight = h.calls.gate.inFlight()
	st.StderrTail = h.conn.tail.get()
	h.cat.status(&st)
	st.StrayAnswers = h.strays.count()
	return st
}

// InFlight is how many calls the server has in flight now.
func (h *Handle) InFlight() int64 { return h.calls.gate.inFlight() }

// Close stops accepting calls, waits for in-flight ones until ctx is done,
// then stops the server (for stdio: close stdin, SIGTERM and SIGKILL to the
// process group). Close is idempotent and safe for concurrent use; every
// call waits until the server is stopped.
func (h *Handle) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		drained := h.calls.gate.close()
		h.sup.shutDown() // no supervisor loop starts from here: wg only shrinks
		select {
		case <-drained:
		case <-ctx.Done():
			h.log.Warn("drain cut short", "reason", "calls still in flight")
		}
		h.life.cancel()
		h.life.wg.Wait()
		h.cat.store(nil)
		h.sup.setState(StateStopped, "")
		h.sup.finishFirst()
	})
	h.life.wg.Wait()
	return nil
}
