package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connector reaches the server: it starts the process or dials the URL
// (resolving references first), opens the session in the server's era and
// lists the catalog. It remembers, across connects, what the auto transport
// and the era probe found, and the child's last stderr lines.
type connector struct {
	spec     *atomic.Pointer[Spec] // the Handle's
	log      hclog.Logger
	expander Expander
	redact   func(lines []string) []string
	info     *mcp.Implementation
	peered   bool        // a Peer routes sampling and elicitation
	hooks    clientHooks // what a session's client hands to the Handle
	cat      *catalogStore
	sess     *sessionSlot
	// oneClient: the server's roots are its one client's (Options.OneClient)
	oneClient bool

	autoSSE atomic.Bool  // TransportAuto: the endpoint speaks legacy SSE only
	era     atomic.Int32 // what the auto probe found; eraUnknown: probe
	tail    stderrTail   // the child's last stderr lines, for Status
	auth    authSlot     // the OAuth handler, made at the first connect
}

// sp is the current spec.
func (cn *connector) sp() *Spec { return cn.spec.Load() }

// transportName is the transport as status shows it; an auto entry shows
// the one in use ("auto: sse").
func (cn *connector) transportName() string {
	if t := cn.sp().Transport; t != TransportAuto {
		return t
	}
	return TransportAuto + ": " + cn.remoteKind()
}

// knownLegacy records that the server spoke an era before 2026-07-28 in an
// earlier run (Seed): it is not probed again until a connect fails.
func (cn *connector) knownLegacy() { cn.era.CompareAndSwap(eraUnknown, eraLegacy) }

// forgetEra has the next connect probe again.
func (cn *connector) forgetEra() { cn.era.Store(eraUnknown) }

// testTransport replaces the real transports in tests (export_test.go), so
// that supervision can run on in-memory sessions inside a synctest bubble.
var testTransport func(Spec) (mcp.Transport, error)

// transport returns how to reach the server: a child process (s.proc is
// set), a remote endpoint, or what the test hook gives.
func (cn *connector) transport(ctx context.Context, s *session) (mcp.Transport, error) {
	dial := testTransport
	if cn.sp().Transport == TransportStdio {
		env, args, err := cn.expandStdio(ctx)
		if err != nil {
			return nil, err
		}
		if dial != nil {
			return dial(*cn.sp())
		}
		noise := newNoiseWriter(cn.log)
		noise.redact = cn.redact
		t, proc, err := stdioTransport(*cn.sp(), env, args, s.stderr, func(line []byte, _ error) { noise.Line(line) })
		s.proc = proc
		return t, err
	}
	url, headers, err := cn.expandRemote(ctx)
	if err == nil {
		err = checkURL(url)
	}
	if err != nil {
		return nil, err
	}
	if dial != nil {
		return dial(*cn.sp())
	}
	var h auth.OAuthHandler
	if cn.sp().OAuth != nil {
		if h, err = cn.auth.handler(ctx, cn, url); err != nil {
			return nil, err
		}
	}
	return remoteTransport(*cn.sp(), cn.remoteKind(), url, headers, h, cn.log)
}

// remoteKind is the transport a remote server is reached with: the
// configured one, or for TransportAuto the one its endpoint last accepted.
func (cn *connector) remoteKind() string {
	switch t := cn.sp().Transport; {
	case t != TransportAuto:
		return t
	case cn.autoSSE.Load():
		return TransportSSE
	default:
		return TransportHTTP
	}
}

// fallBackToSSE reports whether a failed connect should be tried again
// over legacy SSE: an auto entry whose endpoint refused the streamable
// initialize POST with a 4xx status. It switches the handle to SSE; a
// failed SSE attempt switches it back, so every restart probes both.
func (cn *connector) fallBackToSSE(err error) bool {
	if cn.sp().Transport != TransportAuto {
		return false
	}
	if cn.autoSSE.Load() {
		cn.autoSSE.Store(false)
		return false
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Code < 400 || se.Code > 499 {
		return false
	}
	cn.log.Info("endpoint refused streamable HTTP, trying legacy SSE", "reason", se.Status)
	cn.autoSSE.Store(true)
	return true
}

// connect starts the server (resolving references first), initializes the
// session and lists the catalog, all within the connect timeout.
func (cn *connector) connect(parent context.Context) (*session, *Catalog, error) {
	ctx, cancel := context.WithTimeout(parent, cn.sp().connectTimeout())
	defer cancel()
	s := &session{stderr: newLineWriter(cn.log, &cn.tail), lost: make(chan struct{})}
	s.stderr.redact = cn.redact
	t, err := cn.transport(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	if s.proc != nil {
		// A child that hangs in its start-up is stopped when the connect
		// deadline passes.
		defer s.proc.guard(ctx)()
	}
	// The connection outlives ctx: the SSE transport ties its stream to
	// the Connect context.
	conn, err := t.Connect(context.WithoutCancel(ctx))
	if err != nil {
		cn.fallBackToSSE(err) // an SSE endpoint that refused: probe both next time
		if s.proc != nil {
			s.proc.reapGroup()
		}
		s.stderr.Flush()
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	s.cl = newClient(conn, cn.hooks, cn.log)
	if err := cn.handshake(ctx, s); err != nil {
		s.close()
		if errors.Is(err, errRespawn) {
			return cn.connect(parent) // the era is known now: no probe
		}
		if cn.fallBackToSSE(err) {
			return cn.connect(parent)
		}
		if s.proc != nil && ctx.Err() == nil && errors.Is(err, ErrConnectionClosed) {
			err = fmt.Errorf("process exited before initialize finished: %w", err)
		}
		return nil, nil, fmt.Errorf("connect: %w", timeoutCause(ctx, err))
	}
	// A failing prompts or resources list leaves the catalog partial; only
	// tools/list decides the start. See #23.
	// A failed list keeps what the last listing had; a seed from disk is
	// not a listing.
	cat, err := listCatalog(ctx, s.cl, cn.sp(), cn.cat.base(), nil)
	if err != nil {
		s.close()
		return nil, nil, fmt.Errorf("list: %w", timeoutCause(ctx, err))
	}
	cn.sess.restore(ctx, s.cl)
	return s, cat, nil
}

func timeoutCause(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within the connect timeout: %w", err)
	}
	return err
}

func (cn *connector) expand(ctx context.Context, v string) (string, error) {
	if cn.expander == nil {
		return v, nil
	}
	return cn.expander.Expand(ctx, v)
}

func (cn *connector) expandStdio(ctx context.Context) (map[string]string, []string, error) {
	var errs []error
	env := make(map[string]string, len(cn.sp().Env))
	for k, v := range cn.sp().Env {
		x, err := cn.expand(ctx, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("env %s: %w", k, err))
			continue
		}
		env[k] = x
	}
	args := make([]string, len(cn.sp().Args))
	for i, a := range cn.sp().Args {
		x, err := cn.expand(ctx, a)
		if err != nil {
			errs = append(errs, fmt.Errorf("args[%d]: %w", i, err))
			continue
		}
		args[i] = x
	}
	return env, args, errors.Join(errs...)
}

func (cn *connector) expandRemote(ctx context.Context) (string, map[string]string, error) {
	var errs []error
	url, err := cn.expand(ctx, cn.sp().URL)
	if err != nil {
		errs = append(errs, fmt.Errorf("url: %w", err))
	}
	headers := make(map[string]string, len(cn.sp().Headers))
	for k, v := range cn.sp().Headers {
		x, err := cn.expand(ctx, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("headers %s: %w", k, err))
			continue
		}
		headers[k] = x
	}
	return url, headers, errors.Join(errs...)
}

// errRespawn asks connect to start the server again: a stdio server that
// did not take the server/discover probe may have exited on it.
var errRespawn = errors.New("respawn after the protocol probe")

// handshake opens the session in the server's era. A configured version
// decides it; otherwise (auto) an HTTP or stdio server is probed with
// server/discover, bounded by probeTimeout, and the answer is remembered
// until a connect fails. Legacy SSE has no 2026-07-28.
func (cn *connector) handshake(ctx context.Context, s *session) error {
	version := cn.sp().protocolVersion()
	info, caps := cn.info, cn.capabilities()
	probe := version == Modern || (version == "" && cn.remoteKind() != TransportSSE && cn.era.Load() != eraLegacy)
	if !probe {
		return s.cl.initialize(ctx, version, info, caps)
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	modern, err := s.cl.discover(pctx, info, caps)
	cancel()
	switch {
	case modern:
		cn.era.Store(eraModern)
		s.cl.listen()
		return nil
	case version == Modern:
		if err == nil {
			err = errors.New("the server does not list it in server/discover")
		}
		return fmt.Errorf("protocol %s: %w", Modern, err)
	}
	cn.era.Store(eraLegacy)
	if err != nil && s.proc != nil {
		// A legacy stdio server may have exited on the probe, or be stuck
		// on it: it starts again and is initialized at once.
		return errRespawn
	}
	return s.cl.initialize(ctx, version, info, caps)
}

// The eras a server was found to speak (connector.era).
const (
	eraUnknown int32 = iota
	eraLegacy
	eraModern
)
