package proxy

import (
	"net/http"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/mcp-switchboard/switchboard/proxy/admin"
	"github.com/mcp-switchboard/switchboard/proxy/dispatch"
	"github.com/mcp-switchboard/switchboard/proxy/internal/connlimit"
	"github.com/mcp-switchboard/switchboard/proxy/internal/pin"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// adminBackend is what the admin endpoints read and trigger.
type adminBackend struct{ p *Proxy }

// Readiness: ready once every eager server finished its first attempt
// (ready or not), or, with requireReady, once those servers are ready.
func (a adminBackend) Readiness() admin.Readiness {
	snap := a.p.serving.Load().Snap
	waiting := []string{}
	if snap != nil {
		required := map[string]bool{}
		for _, n := range snap.Config.RequireReady {
			required[n] = true
		}
		for key, h := range snap.Handles {
			if len(required) > 0 {
				if required[key] && h.Status().State != upstream.StateReady {
					waiting = append(waiting, key)
				}
				continue
			}
			select {
			case <-h.FirstAttempt():
			default:
				waiting = append(waiting, key)
			}
		}
	}
	sort.Strings(waiting)
	// While shutting down, take the pod out of the Service at once.
	stopping := a.p.stopping.Load()
	// Not ready while audit records are lost; the probe also retries the
	// write, as no call may come to find out that it works again.
	audit := a.p.serving.Load().Audit.Retry(time.Second)
	return admin.Readiness{Ready: snap != nil && len(waiting) == 0 && !stopping && !audit, Waiting: waiting, Stopping: stopping,
		AuditFailing: audit}
}

func (a adminBackend) Status() any { return a.p.statusReport() }

// PublicStatus is /status without the views of agents, whose IDs are
// names behind the admin token: only their number and their sessions.
func (a adminBackend) PublicStatus() any {
	rep := a.p.statusReport()
	views := map[string]ViewStatus{}
	hidden := &HiddenViews{}
	for name, v := range rep.Views {
		if name == "default" {
			views[name] = v
			continue
		}
		hidden.Views++
		hidden.Sessions += v.Sessions
	}
	rep.Views = views
	if hidden.Views > 0 {
		rep.AgentViews = hidden
	}
	return rep
}
func (a adminBackend) Restart(server string) int {
	return a.p.restart(server)
}

// Tools is the tool table of the view named name ("default": the
// default view), hidden tools included, for the status page.
func (a adminBackend) Tools(name string) ([]admin.Tool, bool) {
	if name == "default" {
		name = ""
	}
	v := a.p.serving.Load().Views[name]
	if v == nil {
		return nil, false
	}
	out := make([]admin.Tool, 0, len(v.List)+len(v.Hidden))
	for _, r := range v.List {
		out = append(out, admin.Tool{Public: r.Public, Server: r.Entry.Key, Original: r.Original})
	}
	for _, h := range v.Hidden {
		out = append(out, admin.Tool{Public: h.Public, Server: h.Server, Original: h.Original, Hidden: h.Reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Public < out[j].Public })
	return out, true
}

func (a adminBackend) Metrics() http.Handler { return a.p.serving.Load().Tel.MetricsHandler() }

func (a adminBackend) ReloadToken() string {
	if a.p.opts.ConfigPath == "" {
		return "" // the embedded config: nothing to reload
	}
	return a.p.serving.Load().Access.ReloadToken
}

func (a adminBackend) Profiles() bool { return a.p.opts.AdminPprof }

func (a adminBackend) QueueReload() int64 {
	a.p.triggerReload("admin")
	return a.p.serving.Load().Snap.Gen
}

// StatusReport is the JSON of GET /status.
type StatusReport struct {
	Version string `json:"version"`
	// Config is the absolute path of the config file, or "embedded demo";
	// PID, Listen ("stdio" with --stdio) and Admin say which process
	// answers, so `switchboard status` can show what it reports on.
	Config  string                `json:"config"`
	PID     int                   `json:"pid"`
	Listen  string                `json:"listen"`
	Admin   string                `json:"admin"`
	Gen     int64                 `json:"gen"`
	Digest  string                `json:"digest"`
	Time    time.Time             `json:"time"`
	Servers []upstream.Status     `json:"servers"`
	Views   map[string]ViewStatus `json:"views"`
	// LastReload is the last reload attempt; absent until one ran.
	LastReload *ReloadResult `json:"lastReload,omitempty"`
	// Goroutines is the process's goroutine count, to spot leaks over many
	// upstream restarts.
	Goroutines int `json:"goroutines"`
	// Tables counts what switchboard keeps for the open sessions; each
	// goes back to zero when the last one closes.
	Tables dispatch.Tables `json:"tables"`
	// Replica names this process in session IDs; SessionsResumed counts
	// the sessions it resumed from IDs it did not mint (package edge, continuity.go).
	Replica         string `json:"replica"`
	SessionsResumed int64  `json:"sessionsResumed"`
	// Collisions are the names more than one server wants, and Findings
	// the definitions the trust boundary flagged or skipped, in every
	// view as served now. The log names each once, when it appears.
	Collisions []view.CollisionStatus `json:"collisions,omitempty"`
	Findings   []view.FindingStatus   `json:"findings,omitempty"`
	// AgentViews counts the views of agents when Views leaves them out:
	// for a request without the admin token (admin.reloadToken).
	AgentViews *HiddenViews `json:"agentViews,omitempty"`
	// Audit is the audit log's state; absent when it is off.
	Audit *dispatch.AuditStatus `json:"audit,omitempty"`
	// PendingPins are the changed tool definitions held for approval
	// (sanitize.pinMode block) or reported (warn).
	PendingPins []pin.Change `json:"pendingPins,omitempty"`
	// Connections is the downstream connections open now and their cap
	// (the descriptor limit less a reserve, package connlimit); absent
	// with --stdio.
	Connections *ConnectionsStatus `json:"connections,omitempty"`
}

// ConnectionsStatus is the downstream connections open now and the most
// that may be (package connlimit).
type ConnectionsStatus = connlimit.Status

// HiddenViews counts the agent views /status does not name.
type HiddenViews struct {
	Views    int `json:"views"`
	Sessions int `json:"sessions"`
}

// ViewStatus summarises one downstream view.
type ViewStatus struct {
	Tools    int `json:"tools"`
	Sessions int `json:"sessions"`
	// Activity is the view's tool calls per minute, kept in memory for
	// the last 15 minutes.
	Activity telemetry.ViewActivity `json:"activity"`
}

func (p *Proxy) statusReport() StatusReport {
	cur := p.serving.Load()
	snap := cur.Snap
	rep := StatusReport{Version: Version, Config: p.configName(), PID: os.Getpid(), Listen: p.listenAddr, Admin: p.adminAddr,
		Time: time.Now().UTC(), Views: map[string]ViewStatus{}, Goroutines: runtime.NumGoroutine(),
		Replica: p.edge.Replica(), SessionsResumed: p.edge.Resumed(), Tables: p.d.Tables()}
	if p.conns != nil {
		st := p.conns.Status()
		rep.Connections = &st
	}
	if snap == nil {
		return rep
	}
	rep.Gen, rep.Digest = snap.Gen, snap.Digest
	if rep.Audit = cur.Audit.Status(); rep.Audit != nil {
		rep.Audit.LastError = p.redact(rep.Audit.LastError)
	}
	if lr := p.lastReload.Load(); lr != nil {
		c := *lr
		c.Error = p.redact(c.Error)
		rep.LastReload = &c
	}
	perClient := perClientHandles(snap)
	for _, k := range view.SortedKeys(snap.Handles) {
		st := statusOf(snap.Handles[k], perClient, rep.Tables.PerClient)
		st.LastError = p.redact(st.LastError)
		for i, l := range st.StderrTail {
			st.StderrTail[i] = p.redact(l) // a copy: Status clones the lines
		}
		for m, msg := range st.CatalogErrors {
			st.CatalogErrors[m] = p.redact(msg) // a copy: Status clones the map
		}
		rep.Servers = append(rep.Servers, st)
	}
	if n := cur.Notes; n != nil {
		rep.Collisions, rep.Findings = n.Collisions, n.Redacted(p.redact)
	}
	rep.PendingPins = p.pins.Pending()
	counts := p.d.SessionCounts()
	for id, v := range cur.Views {
		name := id
		if name == "" {
			name = "default"
		}
		rep.Views[name] = ViewStatus{Tools: len(v.Tools), Sessions: counts[id], Activity: p.activity.View(id)}
	}
	p.activity.Keep(func(id string) bool { return cur.Views[id] != nil })
	return rep
}

// perClientHandles are the shared handles of snap's servers with
// isolation: per-client.
func perClientHandles(snap *view.Snapshot) map[*upstream.Handle]bool {
	perClient := map[*upstream.Handle]bool{}
	for _, vs := range snap.Views {
		for _, e := range vs.Servers {
			if e.PerClient {
				perClient[e.Handle] = true
			}
		}
	}
	return perClient
}

// statusOf is h's status as /status and the gauges show it: for a
// server with isolation: per-client (perClient), with its instances and
// their calls in flight (dispatch.Tables.PerClient).
func statusOf(h *upstream.Handle, perClient map[*upstream.Handle]bool, instances map[*upstream.Handle]dispatch.Instances) upstream.Status {
	st := h.Status()
	if perClient[h] {
		in := instances[h]
		st.Instances = &in.Running
		st.InFlight += in.InFlight
	}
	return st
}
