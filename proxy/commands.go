package proxy

import (
	"context"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/internal/gctune"
	"github.com/mcp-switchboard/switchboard/proxy/internal/maxprocs"
	"github.com/mcp-switchboard/switchboard/proxy/internal/pin"
	"github.com/mcp-switchboard/switchboard/proxy/internal/sysmon"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// What the command line (cmd/switchboard) asks of a proxy besides Run.

// LoadConfig loads and validates the config o names (the embedded demo
// config without a path), with o's overrides applied.
func LoadConfig(o Options) (*config.Config, error) { return loadConfig(o) }

// PinFilePath is the pin file c's sanitize.pinFile names ("" if none).
func PinFilePath(c *config.Config) string { return view.PinFilePath(c) }

// RunPins lists or approves (action "list" or "approve") the pinned tool
// definitions in the pin file at path, for one server or tool when set,
// handing out each line of the report.
func RunPins(path, action, server, tool string, out func(string)) error {
	return pin.Run(path, []string{action}, server, tool, out)
}

// TuneRuntime sets the runtime up as serve runs: on one processor unless
// GOMAXPROCS says otherwise (package maxprocs), with the pages package
// initialisation ran released and the collector's tuning until ctx ends
// (package gctune).
func TuneRuntime(ctx context.Context, getenv func(string) string) {
	maxprocs.Set(getenv)
	gctune.ReleaseInitMemory()
	gctune.Tune(ctx, getenv)
}

// SysmonEnv returns the GODEBUG value serve runs with and whether the
// process must be started again to have it (package sysmon): the runtime's
// monitor then backs off between checks instead of waking every 20 µs.
func SysmonEnv(getenv func(string) string) (godebug string, restart bool) {
	return sysmon.Env(getenv)
}

// ToolRow is one published tool of the default view.
type ToolRow struct {
	Public, Server, Original, Title, Description string
	InputSchema                                  any
}

// ListTools starts the servers of the config o names, lazy ones too (a
// listing is what they wait for), waits for each first start attempt (at
// most wait; zero: the largest server timeout), and returns the default
// view's tool table, the definitions the trust boundary withheld, flagged
// or skipped (in every view), and the servers that are not up with their
// (redacted) errors and stderr.
func ListTools(ctx context.Context, o Options, wait time.Duration) ([]ToolRow, []view.FindingStatus, []upstream.Status, error) {
	p, c, err := New(o)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, s := range c.BaseServers() {
		s.Lazy = false
	}
	// The table is what the servers list now: a catalog from an earlier
	// run is not shown (what they list is kept for serve).
	p.catalogs.seedOff = true
	if err := p.apply(ctx, c, nil); err != nil {
		return nil, nil, nil, err
	}
	defer p.closeAll()
	snap := p.serving.Load().Snap
	if wait == 0 {
		for _, h := range snap.Handles {
			wait = max(wait, h.Spec().ConnectTimeout)
		}
	}
	deadline := time.After(wait)
	for _, h := range snap.Handles {
		h.Start()
		select {
		case <-h.FirstAttempt():
		case <-deadline:
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		}
	}
	p.rebuildAll()
	var rows []ToolRow
	for _, r := range p.serving.Load().Views[""].List {
		rows = append(rows, ToolRow{Public: r.Public, Server: r.Entry.Key, Original: r.Original, Title: r.Tool.Title, Description: r.Tool.Description, InputSchema: r.Tool.InputSchema})
	}
	var down []upstream.Status
	for _, k := range view.SortedKeys(snap.Handles) {
		if st := snap.Handles[k].Status(); st.State != upstream.StateReady && st.State != upstream.StateIdle {
			st.LastError = p.redact(st.LastError)
			for i, l := range st.StderrTail {
				st.StderrTail[i] = p.redact(l)
			}
			down = append(down, st)
		}
	}
	return rows, p.serving.Load().Notes.Redacted(p.redact), down, nil
}

// CheckPinFile reads the pin file at path as serve would: an error for one
// serve refuses (a corrupt file, naming it and what to do), a note for one
// it starts with anyway (an empty file left by a crash).
func CheckPinFile(path string) (note string, err error) { return pin.CheckFile(path) }

// Expander resolves references as serve does (auth login, status,
// logout); kv is its Vault KV v2, for tokenStore "vault:…".
func Expander() (x upstream.Expander, kv *secrets.VaultKV) {
	r := secrets.NewResolver(resolverOptions(secrets.NewSet()))
	return upstreamSecrets{r}, r.VaultKV()
}
