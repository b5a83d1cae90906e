package dispatch

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/internal/taskid"
	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// Options are what a Dispatcher is made of.
type Options struct {
	Log        hclog.Logger
	ServerInfo *mcp.Implementation // what initialize answers as switchboard's implementation
	Redactor   *secrets.Set
	Serving    *Serving
	// Rebuild rebuilds the views keep reports true for and publishes them
	// (a lazy server that started, a server awaited for a call).
	Rebuild func(keep func(*view.Spec) bool)
	// NewClient makes the handle of a per-client instance of spec, whose
	// requests and notifications go to peer; not started.
	NewClient func(spec upstream.Spec, peer upstream.Peer) *upstream.Handle
	// Resumable wraps the handler of a method whose upstream may ask for
	// input (mrtr.Calls.Wrap).
	Resumable func(method string, next session.Handler) session.Handler
	// TaskKey, if set, is the secret task IDs are sealed under at each
	// use (requestStateKey's, which replicas share); else a key of the
	// process's own.
	TaskKey func() []byte
	Started time.Time // switchboard's start: the first lists' wait counts from it
	// Activity counts each view's calls per minute (the status page);
	// nil: not counted.
	Activity *telemetry.Activity
	// OneClient says there is one downstream session (`serve --stdio`):
	// the shared servers' roots are its client's (upstream.Options.OneClient).
	OneClient bool
}

// Dispatcher answers every downstream session's requests in its view.
type Dispatcher struct {
	log        hclog.Logger
	sessLog    hclog.Logger // every downstream session's, made once
	serverInfo *mcp.Implementation
	trust      *trust
	serving    *Serving
	rebuild    func(keep func(*view.Spec) bool)
	resumable  func(string, session.Handler) session.Handler
	started    time.Time
	activity   *telemetry.Activity

	sessions *sessionTable
	// sessionGone is signalled (never blocking) when a session closes.
	sessionGone chan struct{}
	held        sessionCounts
	peer        *peer
	clients     *clientHandles
	callers     *callerFound // search mode's found sets of callers without a session
	tasks       *taskRoutes  // the tasks extension's methods and IDs
	methods     session.Methods
	// Made once, not per session: a 2026-07-28 request opens one.
	offerModernFn func(*session.Session, *mcp.ClientCapabilities) bool
	closeFn       func(*session.Session)
	extensionsFn  func(context.Context, *session.Session, *mcp.ClientCapabilities) map[string]any
}

// New makes a Dispatcher.
func New(o Options) *Dispatcher {
	d := &Dispatcher{
		log:         o.Log,
		sessLog:     o.Log.Named("session"),
		serverInfo:  o.ServerInfo,
		serving:     o.Serving,
		rebuild:     o.Rebuild,
		resumable:   o.Resumable,
		started:     o.Started,
		activity:    o.Activity,
		sessionGone: make(chan struct{}, 1),
	}
	d.trust = &trust{redactor: o.Redactor, log: o.Log, serving: o.Serving}
	d.sessions = &sessionTable{}
	d.callers = newCallerFound(time.Now)
	d.clients = &clientHandles{log: o.Log, make: o.NewClient, held: &d.held,
		limit: func() int { return d.serving.Load().Snap.Config.SessionLimit() }}
	d.peer = &peer{log: o.Log, trust: d.trust, serving: o.Serving, sessions: d.sessions, clients: d.clients, subs: map[subKey]int{},
		oneClient: o.OneClient}
	d.clients.peer = d.peer
	d.tasks = &taskRoutes{d: d, codec: taskid.New()}
	if o.TaskKey != nil {
		d.tasks.codec = taskid.Following(o.TaskKey)
	}
	d.methods = d.table()
	d.offerModernFn, d.closeFn, d.extensionsFn = d.offerModern, d.closeSession, d.extensions
	return d
}
