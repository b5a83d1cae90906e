package edge

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/internal/streamhttp"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// Options are what an Edge is made of.
type Options struct {
	Log      hclog.Logger
	Serving  *dispatch.Serving
	Sessions *dispatch.Dispatcher
	// Replica names this process in session IDs ("": $SWITCHBOARD_REPLICA,
	// else the host name).
	Replica string
	Getenv  func(string) string
	// Consents, if set, are the in-band OAuth consents whose start and
	// callback URLs the edge serves.
	Consents *oauth.Consents
}

// Edge is switchboard's HTTP side toward its clients: the MCP endpoints
// of every view, their host check and authentication, and the session IDs
// that let another replica resume a session.
type Edge struct {
	log        hclog.Logger
	serving    *dispatch.Serving
	d          *dispatch.Dispatcher
	streamable *streamhttp.Handler // lives as long as the process, so a reload can set its idle timeout
	ids        *continuity
	inflight   requestGate // downstream POSTs, for graceful shutdown
	consents   *oauth.Consents
}

// New makes an Edge; it serves nothing until Handler is mounted.
func New(o Options) (*Edge, error) {
	ids, err := newContinuity(o.Replica, o.Getenv)
	if err != nil {
		return nil, err
	}
	e := &Edge{log: o.Log, serving: o.Serving, d: o.Sessions, ids: ids, consents: o.Consents}
	e.streamable = streamhttp.New(e.openHTTP, e.authorize, e.log)
	e.streamable.SetContinuity(streamhttp.Continuity{Mint: e.mintSessionID, Resume: e.resumeSession, Issued: e.issued})
	return e, nil
}

// Handler is the downstream mux on listen.
func (e *Edge) Handler() http.Handler { return e.routes() }

// Apply takes a generation's settings: the session key (resolved; "":
// the process's own), the idle timeout of sessions and how long a session
// ID lasts after its issue (0: for ever).
func (e *Edge) Apply(sessionKey string, idle, maxAge time.Duration) {
	e.ids.useKey(sessionKey)
	e.ids.maxAge.Store(int64(max(maxAge, 0)))
	e.streamable.SetIdleTimeout(idle)
	e.streamable.SetMaxAge(maxAge)
}

// Drain refuses new POSTs and waits for those in flight until ctx is done.
func (e *Edge) Drain(ctx context.Context) { e.inflight.drain(ctx) }

// Close ends the streamable-HTTP sessions' streams.
func (e *Edge) Close() { e.streamable.Close() }

// Replica is the name of this process in session IDs.
func (e *Edge) Replica() string { return e.ids.replica }

// Resumed counts the sessions resumed from IDs this process did not mint.
func (e *Edge) Resumed() int64 { return e.streamable.Resumed() }
