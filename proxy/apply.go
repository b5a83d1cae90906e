package proxy

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// apply makes c the current config. It resolves the downstream tokens
// (a failure rejects c), starts handles for new or changed specs and keeps
// unchanged ones (same process, same session). With wait, it lets the new
// handles finish their first start attempt before the swap, so a changed
// server's tools never disappear. Then it publishes the snapshot, brings
// every view in line, and drains the handles that are no longer used.
func (p *Proxy) apply(ctx context.Context, c *config.Config, wait bool) error {
	// Token references may be remote lookups: resolved before the lock.
	at, reloadToken, err := p.resolveAuth(ctx, c)
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
	if err := p.pins.use(view.PinFilePath(c)); err != nil {
		obs.discard()
		return &ConfigError{err}
	}
	planned, specs := view.Plan(c)
	if wait {
		// Editing a server is its operator's approval of its changed
		// tool definitions; a reload for another reason approves nothing.
		p.pins.approve(p.changedServers(specs))
	}
	hp := p.planHandles(specs)
	p.catalogs.use(catalogDir(c.CatalogCache, p.opts.CatalogDir))
	for _, h := range hp.started {
		p.catalogs.seed(h)
		h.Start()
	}
	if wait {
		waitFirstAttempts(ctx, hp.started)
	}
	// Settings that need no new process apply in place (timeouts, restart
	// policy, breaker, laziness).
	for key, h := range hp.kept {
		if err := h.Update(specs[key]); err != nil {
			p.log.Error("upstream settings not applied", "upstream", h.Name(), "error", err)
		}
	}
	prevObs := p.obs
	p.obs = obs.next(prevObs)
	p.gen++
	snap := view.NewSnapshot(p.gen, c, hp.next, planned)
	snap.KeepLimiters(p.serving.Load().Snap)
	p.parked.UseKey(stateKey)
	p.handles = hp.next
	if lvl := hclog.LevelFromString(c.LogLevel); lvl != hclog.NoLevel {
		p.log.SetLevel(lvl)
	} else {
		p.log.SetLevel(hclog.Info)
	}
	p.edge.Apply(sessionKey, c.SessionIdleTimeout(), c.SessionMaxAge())
	inUse := p.publish(snap, dispatch.Access{Tokens: at, ReloadToken: reloadToken})
	for _, h := range hp.started {
		// Servers that listed before the snapshot was published (their
		// change had no view to rebuild) are kept now.
		p.saveCatalog(h)
	}
	if len(hp.retired) > 0 {
		p.retire(hp.retired, inUse, c.DrainTimeout())
	}
	p.closeReplaced(prevObs, p.obs, inUse, c.DrainTimeout())
	return nil
}

// handlePlan is what a config does to the running handles.
type handlePlan struct {
	next    map[string]*upstream.Handle // every handle of the config, by key
	kept    map[string]*upstream.Handle // running ones it keeps (same fingerprint)
	started []*upstream.Handle          // new ones, not started yet
	retired []*upstream.Handle          // running ones it no longer uses
}

// changedServers are the handle keys whose spec differs from the running
// one's, or that are new; p.mu held.
func (p *Proxy) changedServers(specs map[string]upstream.Spec) map[string]bool {
	changed := map[string]bool{}
	for key, spec := range specs {
		if h, ok := p.handles[key]; !ok || !reflect.DeepEqual(h.Spec(), spec) {
			changed[key] = true
		}
	}
	return changed
}

// planHandles keeps a running handle for each spec with its fingerprint
// and makes new ones for the rest; p.mu held.
func (p *Proxy) planHandles(specs map[string]upstream.Spec) handlePlan {
	hp := handlePlan{next: make(map[string]*upstream.Handle, len(specs)), kept: map[string]*upstream.Handle{}}
	for key, spec := range specs {
		if h, ok := p.handles[key]; ok && h.Spec().Fingerprint() == spec.Fingerprint() {
			hp.next[key], hp.kept[key] = h, h
			continue
		}
		o := p.handleOptions(p.d.Peer())
		o.OnChange = p.onUpstreamChange
		h := upstream.New(spec, o)
		hp.next[key] = h
		hp.started = append(hp.started, h)
	}
	for key, h := range p.handles {
		if hp.next[key] != h {
			hp.retired = append(hp.retired, h)
		}
	}
	return hp
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
		ClientInfo:  &mcp.Implementation{Name: "switchboard", Version: Version},
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
