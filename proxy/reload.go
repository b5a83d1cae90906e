package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/internal/configwatch"
	"github.com/mcp-switchboard/switchboard/proxy/view"

	"github.com/fsnotify/fsnotify"
	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// reloadDebounce is the quiet period a reload waits for: one editor save
// fires several events.
var reloadDebounce = 200 * time.Millisecond

// ReloadResult is the outcome of the last reload attempt, shown in /status.
type ReloadResult struct {
	OK     bool      `json:"ok"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	Error  string    `json:"error,omitempty"`
	Gen    int64     `json:"gen"`
	Digest string    `json:"digest,omitempty"`
	Noop   bool      `json:"unchanged,omitempty"`
	// Pending names the servers the reload changed whose new process
	// was still starting when it was published: the old one serves until
	// the new one is up.
	Pending []string `json:"pending,omitempty"`
}

// triggerReload asks the reload loop to run; it never blocks. Every trigger
// (file watch, SIGHUP, admin API) goes through here.
func (p *Proxy) triggerReload(reason string) {
	select {
	case p.reloadReq <- reason:
	default:
	}
}

// startReloading starts the reload loop and its triggers: fsnotify on the
// directories the config path resolves through (package configwatch: editors and
// Kubernetes ConfigMaps replace the file through renames and a ..data
// symlink swap, which a watch on the file itself would lose) and SIGHUP.
// With the embedded config there is nothing to reload.
func (p *Proxy) startReloading(ctx context.Context) {
	if p.opts.ConfigPath == "" {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var cw *configwatch.Watch
	w, err := fsnotify.NewWatcher()
	if err != nil {
		p.log.Warn("config watch off", "error", err)
	} else {
		pinPath := func() string {
			path := view.PinFilePath(p.serving.Load().Snap.Config)
			if path == "" {
				return ""
			}
			abs, _ := filepath.Abs(path)
			return abs
		}
		cw = configwatch.New(w, p.opts.ConfigPath, pinPath, p.log)
	}
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		defer signal.Stop(hup)
		var events chan fsnotify.Event
		var errs chan error
		if w != nil {
			defer w.Close()
			events, errs = w.Events, w.Errors
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := p.serving.Load().Audit.Reopen(); err != nil {
					p.log.Warn("audit log reopen", "error", err)
				}
				p.triggerReload("sighup")
			case ev, ok := <-events:
				if !ok {
					events = nil
					continue
				}
				config, pin := cw.Event(ev)
				if pin {
					// An approval from `switchboard pins approve`, or the
					// proxy's own write, which changes nothing.
					if changed, err := p.pins.ReloadFile(); err != nil {
						p.log.Warn("pin file", "error", err)
					} else if changed {
						p.rebuildAll()
					}
				}
				if config {
					p.triggerReload("file")
				}
			case err, ok := <-errs:
				if !ok {
					errs = nil
					continue
				}
				p.log.Warn("config watch", "error", err)
			}
		}
	}()
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		p.reloadLoop(ctx)
	}()
}

// reloadLoop runs reloads one at a time, after reloadDebounce of quiet.
func (p *Proxy) reloadLoop(ctx context.Context) {
	for {
		var reason string
		select {
		case <-ctx.Done():
			return
		case reason = <-p.reloadReq:
		}
		quiet := time.NewTimer(reloadDebounce)
	debounce:
		for {
			select {
			case <-ctx.Done():
				quiet.Stop()
				return
			case r := <-p.reloadReq:
				if r != reason {
					reason += "+" + r
				}
				quiet.Reset(reloadDebounce)
			case <-quiet.C:
				break debounce
			}
		}
		var data []byte
		if hasTrigger(reason, "file") {
			// A writer that pauses longer than the debounce leaves a
			// valid prefix: apply only bytes that stayed the same.
			var err error
			if data, err = p.settle(ctx, &reason); ctx.Err() != nil {
				return
			} else if err != nil {
				p.log.Warn("reload skipped", "reason", reason, "error", err, "duration", time.Duration(settleRounds)*reloadDebounce)
				continue
			}
		}
		p.reload(ctx, reason, data)
	}
}

// reload loads the config file again (or data, the bytes settle read from
// it) and applies it. An invalid config changes nothing; a config the same
// as the latest one applied, or still waiting for its starts, skips the
// work; a file change that would remove most servers is refused
// (removalGuard). A reload that starts servers records its outcome once
// they finished starting (apply).
func (p *Proxy) reload(ctx context.Context, reason string, data []byte) {
	rec := &reloadRecord{p: p, ctx: ctx, res: &ReloadResult{At: time.Now().UTC(), Reason: reason}}
	var c *config.Config
	var err error
	if data != nil {
		c, err = loadConfigData(p.opts, data)
	} else {
		c, err = loadConfig(p.opts)
	}
	running := p.serving.Load().Snap
	p.mu.Lock()
	latest := p.hs.digest()
	p.mu.Unlock()
	if err == nil && c.Digest() == latest {
		rec.unchanged()
		p.log.Debug("reload skipped", "reason", reason, "digest", c.Digest())
		return
	}
	if err == nil {
		err = fixedSettings(running.Config, c)
	}
	if err == nil {
		rec.c = c
		rec.removed, err = removalGuard(running.Config, c, reason)
	}
	if err == nil {
		err = p.apply(ctx, c, rec)
	}
	if err != nil {
		rec.failed(err)
	}
}

// reloadRecord records one reload's outcome once it is known: at once for
// a config refused, unchanged or applied without starting a server; when
// the servers it started finished starting; or when a newer config
// superseded it before that.
type reloadRecord struct {
	p       *Proxy
	ctx     context.Context
	res     *ReloadResult
	c       *config.Config
	removed []string // the servers it removes, to log
}

// unchanged records a config with the digest of the one applied last.
func (r *reloadRecord) unchanged() {
	r.res.OK, r.res.Noop = true, true
	r.p.retryFailed()
	r.store("unchanged")
}

// failed records a config refused.
func (r *reloadRecord) failed(err error) {
	r.res.Error = err.Error()
	var ce *ConfigError
	if errors.As(err, &ce) {
		r.p.log.Warn("reload rejected", "reason", r.res.Reason, "error", strings.ReplaceAll(err.Error(), "\n", "; "))
	} else {
		r.p.log.Error("reload failed", "reason", r.res.Reason, "error", err)
	}
	r.store("failed")
}

// applied records a config published; pending are the servers whose new
// process is still starting (the old one serves until it is up).
func (r *reloadRecord) applied(pending []string) {
	r.res.OK = true
	r.res.Pending = pending
	r.p.retryFailed()
	r.store("ok")
	if len(r.removed) > 0 {
		r.p.log.Warn("servers removed by reload", "names", r.removed, "count", len(r.removed), "reason", r.res.Reason, "gen", r.res.Gen)
	}
	if len(pending) > 0 {
		r.p.log.Info("reload applied", "reason", r.res.Reason, "gen", r.res.Gen, "digest", r.res.Digest, "names", pending)
	} else {
		r.p.log.Info("reload applied", "reason", r.res.Reason, "gen", r.res.Gen, "digest", r.res.Digest)
	}
	logNotes(r.p.log, r.c)
}

// superseded notes a reload that a newer config replaced while it waited
// for the servers it started; the newer one's outcome is recorded instead.
func (r *reloadRecord) superseded() {
	if r == nil {
		return
	}
	r.p.log.Info("reload superseded", "reason", r.res.Reason)
	r.p.serving.Load().Tel.Reload(r.ctx, "superseded")
}

// store makes r's result the last reload's, with the generation served
// now, and counts it.
func (r *reloadRecord) store(result string) {
	snap := r.p.serving.Load().Snap
	r.res.Gen, r.res.Digest = snap.Gen, snap.Digest
	r.p.lastReload.Store(r.res)
	r.p.serving.Load().Tel.Reload(r.ctx, result)
}

// restart restarts every running instance of the named server (an agent's
// override, key@agent, is one too) and returns how many.
func (p *Proxy) restart(server string) int {
	n := 0
	for key, h := range p.serving.Load().Snap.Handles {
		if key == server || strings.HasPrefix(key, server+"@") {
			if h.Restart() {
				p.log.Info("upstream restart requested", "upstream", key)
				n++
			}
		}
	}
	return n
}

// retryFailed restarts the servers that gave up: a reload, even of an
// unchanged config, is the operator saying the cause may be fixed.
func (p *Proxy) retryFailed() {
	for key, h := range p.serving.Load().Snap.Handles {
		if h.Status().State == upstream.StateFailed && h.Restart() {
			p.log.Info("failed upstream retried on reload", "upstream", key)
		}
	}
}

// fixedSettings refuses a reload that changes what only a start can apply:
// the addresses switchboard listens on and its listeners' read timeout.
func fixedSettings(old, c *config.Config) error {
	var changed []string
	if cmp.Or(c.Listen, config.DefaultListen) != cmp.Or(old.Listen, config.DefaultListen) {
		changed = append(changed, fmt.Sprintf("listen (%q → %q)", cmp.Or(old.Listen, config.DefaultListen), cmp.Or(c.Listen, config.DefaultListen)))
	}
	if cmp.Or(c.AdminListen, config.DefaultAdminListen) != cmp.Or(old.AdminListen, config.DefaultAdminListen) {
		changed = append(changed, fmt.Sprintf("adminListen (%q → %q)", cmp.Or(old.AdminListen, config.DefaultAdminListen), cmp.Or(c.AdminListen, config.DefaultAdminListen)))
	}
	if old.ReadTimeout() != c.ReadTimeout() {
		changed = append(changed, fmt.Sprintf("readTimeout (%d → %d ms)", old.ReadTimeout().Milliseconds(), c.ReadTimeout().Milliseconds()))
	}
	if len(changed) == 0 {
		return nil
	}
	return &ConfigError{fmt.Errorf("%s cannot change on reload: restart switchboard to apply it, or restore the running value", strings.Join(changed, " and "))}
}

// observers are the audit log and telemetry a reload builds when their
// settings changed; commit puts them in place and closes the old ones.
type observers struct {
	audit    *dispatch.AuditLog
	newAudit bool
	tel      *telemetry.Telemetry
}

// prepareObservers builds what changed between old and c. A failure (an
// audit file that cannot be opened, an exporter that cannot start)
// rejects the reload with nothing changed.
func (p *Proxy) prepareObservers(ctx context.Context, old, c *config.Config) (*observers, error) {
	o := &observers{}
	if !reflect.DeepEqual(old.Audit, c.Audit) {
		a, err := dispatch.NewAuditLog(c.Audit, p.opts.Stderr, p.redact, p.log.Named("audit"))
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("audit.file: %w", err)}
		}
		o.audit, o.newAudit = a, true
	}
	if !reflect.DeepEqual(old.Telemetry, c.Telemetry) {
		t, err := p.newTelemetry(ctx, c)
		if err != nil {
			o.discard()
			return nil, err
		}
		o.tel = t
	}
	return o, nil
}

// next is the observers that replace cur: the new ones where a reload
// built them, cur's others.
func (o *observers) next(cur dispatch.Observers) dispatch.Observers {
	if o.newAudit {
		cur.Audit = o.audit
	}
	if o.tel != nil {
		cur.Tel = o.tel
	}
	return cur
}

// closeReplaced closes what of old next no longer uses, once every
// generation in inUse drained (they report to old), or after drain, or
// at the shutdown deadline.
func (p *Proxy) closeReplaced(old, next dispatch.Observers, inUse []*dispatch.Gen, drain time.Duration) {
	if old == next {
		return
	}
	p.bg.Go(func() {
		ctx, cancel := context.WithTimeout(p.bgCtx, drain)
		defer cancel()
		for _, g := range inUse {
			select {
			case <-g.Drained():
			case <-ctx.Done():
			}
		}
		if old.Audit != next.Audit {
			old.Audit.Close()
		}
		if old.Tel != next.Tel {
			tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer tcancel()
			old.Tel.Close(tctx)
		}
	})
}

// discard closes observers a failed reload built.
func (o *observers) discard() {
	o.audit.Close()
	if o.tel != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		o.tel.Close(ctx)
	}
}
