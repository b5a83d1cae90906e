package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testTransport replaces the real transports in tests (export_test.go), so
// that supervision can run on in-memory sessions inside a synctest bubble.
var testTransport func(Spec) (mcp.Transport, error)

// transport returns how to reach the server: a child process (s.proc is
// set), a remote endpoint, or what the test hook gives.
func (h *Handle) transport(ctx context.Context, s *session) (mcp.Transport, error) {
	dial := testTransport
	if h.sp().Transport == TransportStdio {
		env, args, err := h.expandStdio(ctx)
		if err != nil {
			return nil, err
		}
		if dial != nil {
			return dial(*h.sp())
		}
		noise := newNoiseWriter(h.log)
		noise.redact = h.opt.RedactLines
		t, proc, err := stdioTransport(*h.sp(), env, args, s.stderr, func(line []byte, _ error) { noise.Line(line) })
		s.proc = proc
		return t, err
	}
	url, headers, err := h.expandRemote(ctx)
	if err == nil {
		err = checkURL(url)
	}
	if err != nil {
		return nil, err
	}
	if dial != nil {
		return dial(*h.sp())
	}
	return remoteTransport(*h.sp(), h.remoteKind(), url, headers, h.log)
}

// remoteKind is the transport a remote server is reached with: the
// configured one, or for TransportAuto the one its endpoint last accepted.
func (h *Handle) remoteKind() string {
	switch t := h.sp().Transport; {
	case t != TransportAuto:
		return t
	case h.autoSSE.Load():
		return TransportSSE
	default:
		return TransportHTTP
	}
}

// fallBackToSSE reports whether a failed connect should be tried again
// over legacy SSE: an auto entry whose endpoint refused the streamable
// initialize POST with a 4xx status. It switches the handle to SSE; a
// failed SSE attempt switches it back, so every restart probes both.
func (h *Handle) fallBackToSSE(err error) bool {
	if h.sp().Transport != TransportAuto {
		return false
	}
	if h.autoSSE.Load() {
		h.autoSSE.Store(false)
		return false
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Code < 400 || se.Code > 499 {
		return false
	}
	h.log.Info("endpoint refused streamable HTTP, trying legacy SSE", "reason", se.Status)
	h.autoSSE.Store(true)
	return true
}

// connect starts the server (resolving references first), initializes the
// session and lists the catalog, all within the connect timeout.
func (h *Handle) connect(parent context.Context) (*session, *Catalog, error) {
	ctx, cancel := context.WithTimeout(parent, h.sp().connectTimeout())
	defer cancel()
	s := &session{stderr: newLineWriter(h.log, &h.stderrTail), lost: make(chan struct{})}
	s.stderr.redact = h.opt.RedactLines
	t, err := h.transport(ctx, s)
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
		h.fallBackToSSE(err) // an SSE endpoint that refused: probe both next time
		if s.proc != nil {
			s.proc.reapGroup()
		}
		s.stderr.Flush()
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	s.cl = newClient(conn, h.hooks(), h.log)
	if err := h.handshake(ctx, s); err != nil {
		s.close()
		if errors.Is(err, errRespawn) {
			return h.connect(parent) // the era is known now: no probe
		}
		if h.fallBackToSSE(err) {
			return h.connect(parent)
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
	cat, err := listCatalog(ctx, s.cl, h.sp(), h.cat.base(), nil)
	if err != nil {
		s.close()
		return nil, nil, fmt.Errorf("list: %w", timeoutCause(ctx, err))
	}
	h.sess.restore(ctx, s.cl)
	return s, cat, nil
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
	env := make(map[string]string, len(h.sp().Env))
	for k, v := range h.sp().Env {
		x, err := h.expand(ctx, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("env %s: %w", k, err))
			continue
		}
		env[k] = x
	}
	args := make([]string, len(h.sp().Args))
	for i, a := range h.sp().Args {
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
	url, err := h.expand(ctx, h.sp().URL)
	if err != nil {
		errs = append(errs, fmt.Errorf("url: %w", err))
	}
	headers := make(map[string]string, len(h.sp().Headers))
	for k, v := range h.sp().Headers {
		x, err := h.expand(ctx, v)
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
func (h *Handle) handshake(ctx context.Context, s *session) error {
	version := h.sp().protocolVersion()
	info, caps := h.opt.ClientInfo, h.capabilities()
	probe := version == Modern || (version == "" && h.remoteKind() != TransportSSE && h.era.Load() != eraLegacy)
	if !probe {
		return s.cl.initialize(ctx, version, info, caps)
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	modern, err := s.cl.discover(pctx, info, caps)
	cancel()
	switch {
	case modern:
		h.era.Store(eraModern)
		s.cl.listen()
		return nil
	case version == Modern:
		if err == nil {
			err = errors.New("the server does not list it in server/discover")
		}
		return fmt.Errorf("protocol %s: %w", Modern, err)
	}
	h.era.Store(eraLegacy)
	if err != nil && s.proc != nil {
		// A legacy stdio server may have exited on the probe, or be stuck
		// on it: it starts again and is initialized at once.
		return errRespawn
	}
	return s.cl.initialize(ctx, version, info, caps)
}

// The eras a server was found to speak (Handle.era).
const (
	eraUnknown int32 = iota
	eraLegacy
	eraModern
)
