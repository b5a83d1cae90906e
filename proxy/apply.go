package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// apply makes c the current config. It resolves the downstream tokens
// (a failure rejects c), keeps the running handles whose spec has the same
// fingerprint (same process, same session) and starts new ones for the
// rest. Then it publishes the snapshot, brings every view in line, and
// drains the handles that are no longer used.
//
// A reload (rec not nil) swaps a changed server's new process in only once
// it finished its first start attempt, so that the server's tools never
// disappear (handleSet): a reload that started servers publishes when they
// finished starting (startFinished) and records its outcome then; one that
// started none publishes now, servers a superseded reload started being
// swapped in as they come up. apply itself never waits for a start.
func (p *Proxy) apply(ctx context.Context, c *config.Config, rec *reloadRecord) error {
	// Token references may be remote lookups: resolved before the lock.
	acc, err := p.resolveAuth(ctx, c)
	if err != nil {
		return &ConfigError{err}
	}
	stateKey, err := p.resolveKey(ctx, "requestStateKey", c.RequestStateKey)
	if err != nil {
		return &ConfigError{err}
	}
	sessionKey, err := p.resolveKey(ctx, "sessionKey", c.SessionKey)
	if err != nil {
		return &ConfigError{err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	obs := &observers{}
	if prev := p.serving.Load().Snap; prev != nil {
		if obs, err = p.prepareObservers(ctx, prev.Config, c); err != nil {
			return err
		}
	}
	if err := p.pins.Use(view.PinFilePath(c)); err != nil {
		obs.discard()
		return &ConfigError{err}
	}
	planned, specs := view.Plan(c)
	if rec != nil {
		// Editing a server is its operator's approval of its changed
		// tool definitions; a reload for another reason approves nothing.
		p.pins.Approve(p.hs.changed(specs))
	}
	if old := p.hs.next; old != nil {
		// A newer config supersedes a reload still waiting for its
		// starts: what it built is not used.
		p.hs.next = nil
		old.obs.discard()
		old.rec.superseded()
	}
	starts, dropped := p.hs.plan(specs, func(spec upstream.Spec) *upstream.Handle {
		o := p.handleOptions(p.d.Peer())
		o.OnChange = p.onUpstreamChange
		return upstream.New(spec, o)
	})
	if len(dropped) > 0 {
		for _, h := range dropped {
			p.log.Info("pending upstream start dropped", "upstream", h.Name(), "reason", "superseded by a newer config")
		}
		p.retire(dropped, nil, c.DrainTimeout())
	}
	p.catalogs.use(catalogDir(c.CatalogCache, p.opts.CatalogDir))
	for _, ps := range starts {
		p.catalogs.seed(ps.h)
		ps.h.Start()
		if rec != nil {
			p.bg.Go(func() { awaitStart(ctx, ps, p.startFinished) })
		}
	}
	j := &reloadJob{c: c, specs: specs, planned: planned, acc: acc,
		stateKey: stateKey, sessionKey: sessionKey, obs: obs, starts: starts, rec: rec}
	if rec != nil && len(starts) > 0 {
		p.hs.next = j
		return nil
	}
	p.commit(j)
	return nil
}

// startFinished is called once a pending start finished its first
// attempt: it publishes the reload that waited for it, if that was its last
// start, or else swaps the server in where the published config runs it;
// p.mu not held.
func (p *Proxy) startFinished(ps *pendingStart) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps.done = true
	if p.hs.pending[ps.key] != ps {
		return // dropped, or already swapped in
	}
	if j := p.hs.next; j != nil && j.ready() {
		p.hs.next = nil
		p.commit(j)
		return
	}
	if cur := p.hs.cur; cur != nil {
		if spec, ok := cur.specs[ps.key]; ok && spec.Fingerprint() == ps.h.Spec().Fingerprint() {
			p.commit(cur.again())
		}
	}
}

// commit publishes j as a new generation: the handles swap (handleSet),
// the settings apply, and the handles no longer served drain; p.mu held.
func (p *Proxy) commit(j *reloadJob) {
	next, in, out := p.hs.swap(j.specs, func(h *upstream.Handle, err error) {
		p.log.Error("upstream settings not applied", "upstream", h.Name(), "error", err)
	})
	prevObs := p.obs
	if j.obs != nil {
		p.obs = j.obs.next(prevObs)
		p.parked.UseKey(j.stateKey)
		if lvl := hclog.LevelFromString(j.c.LogLevel); lvl != hclog.NoLevel {
			p.log.SetLevel(lvl)
		} else {
			p.log.SetLevel(hclog.Info)
		}
		p.edge.Apply(j.sessionKey, j.c.SessionIdleTimeout(), j.c.SessionMaxAge())
	}
	p.gen++
	snap := view.NewSnapshot(p.gen, j.c, next, j.planned)
	snap.KeepLimiters(p.serving.Load().Snap)
	inUse := p.publish(snap, j.acc)
	p.hs.cur = j
	for _, h := range in {
		// Servers that listed before they were published (their start
		// had no view to rebuild) are kept now.
		p.saveCatalog(h)
	}
	if len(out) > 0 {
		p.retire(out, inUse, j.c.DrainTimeout())
	}
	p.closeReplaced(prevObs, p.obs, inUse, j.c.DrainTimeout())
	if j.rec != nil {
		j.rec.applied(p.hs.pendingKeys())
	} else {
		stillPending(&p.lastReload, p.hs.pending)
	}
}

// handleOptions are what every upstream handle runs with; what it sends
// outside a call goes to peer.
func (p *Proxy) handleOptions(peer upstream.Peer) upstream.Options {
	return upstream.Options{
		Logger:      p.log.Named("upstream"),
		SDKLogger:   p.sdkLog,
		Expander:    upstreamSecrets{p.resolver},
		Peer:        peer,
		RedactLines: p.redactor.RedactJoined,
		TokenStore:  oauth.OpenStore(upstreamSecrets{p.resolver}, p.resolver.VaultKV()),
		Redact:      func(v string) { p.redactor.Add(v) },
		Consents:    p.consents,
		ClientInfo:  &mcp.Implementation{Name: "switchboard", Version: Version},
		OneClient:   p.opts.Stdio,
	}
}

// newHandle makes the handle of a per-client instance of spec.
func (p *Proxy) newHandle(spec upstream.Spec, peer upstream.Peer) *upstream.Handle {
	return upstream.New(spec, p.handleOptions(peer))
}

// redact is s with every resolved secret masked.
func (p *Proxy) redact(s string) string { return p.redactor.Redact(s) }

// retire drains and stops handles that left the config, in the
// background: once every generation that could still route to them
// (inUse) was released by its last request, or when the drain timeout
// ends, each handle lets its own calls finish (bounded by the same
// timeout) and stops. A shutdown cuts the drain at its own deadline.
func (p *Proxy) retire(hs []*upstream.Handle, inUse []*dispatch.Gen, drain time.Duration) {
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		ctx, cancel := context.WithTimeout(p.bgCtx, drain)
		defer cancel()
		for _, s := range inUse {
			select {
			case <-s.Drained():
			case <-ctx.Done():
			}
		}
		var wg sync.WaitGroup
		for _, h := range hs {
			wg.Go(func() {
				_ = h.Close(ctx)
				p.d.CloseClients(h)
				p.log.Info("upstream retired", "upstream", h.Name())
			})
		}
		wg.Wait()
	}()
}

// waitFirstAttempts waits until every handle finished its first start
// attempt, each bounded by its own connect timeout.
func waitFirstAttempts(ctx context.Context, hs []*upstream.Handle) {
	var limit time.Duration
	for _, h := range hs {
		limit = max(limit, h.Spec().ConnectTimeout)
	}
	deadline := time.NewTimer(limit + time.Second)
	defer deadline.Stop()
	for _, h := range hs {
		select {
		case <-h.FirstAttempt():
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
