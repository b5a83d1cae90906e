package admin

import (
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"
	"time"
)

// The page's HTML is written here with html.EscapeString on every value,
// not with html/template: the binary links no text/template or
// html/template (see telemetry's TestLinkedExporters: their reflective
// method calls would keep every exported method of every type in it).

// pageStatus is what the page reads of the /status value, decoded from
// its JSON: the page shows nothing /status does not.
type pageStatus struct {
	Version     string
	PID, Gen    int64
	Goroutines  int64
	Config      string
	Servers     []pageServer
	Views       map[string]pageView
	LastReload  *pageReload
	PendingPins []struct{ Server, Tool, Pinned, Pending string }
}

type pageServer struct {
	Name, Transport, State string
	PID, Restarts, Tools   int64
	Since                  time.Time
	Breaker, Catalog       string
	CatalogErrors          map[string]string
	CatalogCached          bool
	LastError              string
	StderrTail             []string
	Instances              *int64 // isolation: per-client
}

type pageView struct {
	Tools, Sessions int64
	Activity        struct {
		Calls, Errors, RateLimited      []int64
		CallsPerMinute, ErrorsPerMinute int64
	}
}

type pageReload struct {
	OK            bool
	At            time.Time
	Reason, Error string
	Unchanged     bool
}

// writer writes HTML: w.s writes markup as is, w.e a value escaped.
type writer struct{ strings.Builder }

func (w *writer) s(parts ...string) {
	for _, p := range parts {
		w.WriteString(p)
	}
}
func (w *writer) e(v any) { w.WriteString(html.EscapeString(fmt.Sprint(v))) }

// render writes the whole page of d.
func render(d *pageData) string {
	var w writer
	w.s(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>switchboard status</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/page.css">
<script src="/page.js" defer></script>
</head>
<body>
<header>
  <h1>switchboard</h1>
  `)
	readiness(&w, d.Ready)
	if d.TokenSet && d.Authorized {
		w.s(`<form method="post" action="/logout" class="right"><button>Sign out</button></form>`)
	}
	w.s("\n</header>\n")
	if !d.Authorized {
		w.s(`<main>
  <p>The admin token is needed to see more than health.</p>
  <form method="post" action="/login" class="login">
    <label>Admin token <input type="password" name="token" autocomplete="current-password" required></label>
    <button>Sign in</button>
  </form>
`)
		if d.Failed {
			w.s(`  <p class="error">That is not the admin token.</p>` + "\n")
		}
		w.s("</main>\n</body>\n</html>\n")
		return w.String()
	}
	st := d.S
	w.s(`<main id="live" data-live>` + "\n" + `<p class="meta">`)
	w.e(st.Version)
	w.s(" · pid ")
	w.e(st.PID)
	w.s(" · config generation ")
	w.e(st.Gen)
	w.s(" · ")
	w.e(st.Goroutines)
	w.s(" goroutines</p>\n")
	if d.Restarted != "" {
		w.s(`<p class="note">Restarted `)
		w.e(d.Restarted)
		w.s(".</p>\n")
	}
	servers(&w, st.Servers, d.TokenSet)
	views(&w, st.Views)
	config(&w, st)
	w.s("</main>\n")
	tools(&w, d)
	w.s("</body>\n</html>\n")
	return w.String()
}

func readiness(w *writer, r Readiness) {
	class, text := "bad", "not ready"
	switch {
	case r.Ready:
		class, text = "ok", "ready"
	case r.Stopping:
		text = "stopping"
	}
	if len(r.Waiting) > 0 {
		text += " · waiting for " + strings.Join(r.Waiting, ", ")
	}
	if r.AuditFailing {
		text += " · audit failing"
	}
	w.s(`<span id="ready" data-live class="pill `, class, `">`)
	w.e(text)
	w.s("</span>\n")
}

func servers(w *writer, list []pageServer, restart bool) {
	w.s(`<section>
<h2>Servers</h2>
<table id="servers">
<thead><tr><th>server</th><th>state</th><th>since</th><th>pid</th><th>restarts</th><th>breaker</th><th>catalog</th><th>tools</th><th></th></tr></thead>
`)
	for _, s := range list {
		w.s(`<tbody class="server" data-server="`)
		w.e(s.Name)
		w.s(`" data-state="`)
		w.e(s.State)
		w.s(`" data-pid="`)
		w.e(s.PID)
		w.s(`" data-catalog="`)
		w.e(s.Catalog)
		w.s(`">` + "\n<tr>\n<td class=\"name\">")
		w.e(s.Name)
		w.s(" <small>")
		w.e(s.Transport)
		w.s(`</small></td><td><span class="state st-`)
		w.e(s.State)
		w.s(`">`)
		w.e(s.State)
		w.s("</span></td><td>")
		w.e(ago(s.Since))
		w.s("</td><td>")
		if s.PID != 0 {
			w.e(s.PID)
		}
		if s.Instances != nil {
			w.s(` <small class="instances">`)
			w.e(*s.Instances)
			w.s(" per-client</small>")
		}
		w.s("</td><td>")
		w.e(s.Restarts)
		w.s("</td><td>")
		w.e(s.Breaker)
		w.s("</td><td>")
		if s.Catalog == "partial" {
			w.s(`<span class="warn">partial</span>`)
			for _, list := range slices.Sorted(maps.Keys(s.CatalogErrors)) {
				w.s(` <small class="failed-list">`)
				w.e(list)
				w.s(" failed</small>")
			}
		} else {
			w.e(s.Catalog)
		}
		if s.CatalogCached {
			w.s(" <small>(cached)</small>")
		}
		w.s("</td><td>")
		w.e(s.Tools)
		w.s("</td><td>")
		if restart {
			w.s(`<form method="post" action="/admin/restart/`)
			w.e(pathEscape(s.Name))
			w.s(`"><button class="restart">Restart</button></form>`)
		}
		w.s("</td>\n</tr>\n")
		if s.LastError != "" || len(s.StderrTail) > 0 || len(s.CatalogErrors) > 0 {
			w.s(`<tr class="detail"><td colspan="9">`)
			if s.LastError != "" {
				w.s(`<p class="error">`)
				w.e(s.LastError)
				w.s("</p>")
			}
			for _, list := range slices.Sorted(maps.Keys(s.CatalogErrors)) {
				w.s(`<p class="warn">`)
				w.e(list + ": " + s.CatalogErrors[list])
				w.s("</p>")
			}
			if len(s.StderrTail) > 0 {
				w.s(`<pre class="stderr">`)
				w.e(strings.Join(s.StderrTail, "\n"))
				w.s("</pre>")
			}
			w.s("</td></tr>\n")
		}
		w.s("</tbody>\n")
	}
	w.s("</table>\n")
	if !restart {
		w.s(`<p class="hint">Set <code>admin.reloadToken</code> in the config to restart servers from this page.</p>` + "\n")
	}
	w.s("</section>\n")
}

func views(w *writer, vs map[string]pageView) {
	w.s(`<section>
<h2>Views</h2>
<table id="views">
<thead><tr><th>view</th><th>sessions</th><th>tools</th><th>calls/min</th><th>errors/min</th><th>rate-limited (15 min)</th><th>last 15 minutes</th></tr></thead>
`)
	for _, name := range slices.Sorted(maps.Keys(vs)) {
		v := vs[name]
		w.s(`<tr data-view="`)
		w.e(name)
		w.s(`"><td>`)
		w.e(name)
		w.s("</td><td>")
		w.e(v.Sessions)
		w.s("</td><td>")
		w.e(v.Tools)
		w.s(`</td><td class="calls">`)
		w.e(v.Activity.CallsPerMinute)
		w.s(`</td><td class="errors">`)
		w.e(v.Activity.ErrorsPerMinute)
		w.s("</td><td>")
		w.e(sum(v.Activity.RateLimited))
		w.s(`</td><td><svg class="spark" viewBox="0 0 140 24" width="140" height="24" role="img" aria-label="calls and errors per minute">`)
		w.s(`<polyline class="errors" points="`, spark(v.Activity.Errors), `"/><polyline class="calls" points="`, spark(v.Activity.Calls), `"/></svg></td></tr>`+"\n")
	}
	w.s("</table>\n</section>\n")
}

func config(w *writer, st *pageStatus) {
	w.s("<section>\n<h2>Config</h2>\n<p>")
	w.e(st.Config)
	w.s("</p>\n")
	if r := st.LastReload; r != nil {
		class, what := "ok", "applied"
		switch {
		case !r.OK:
			class, what = "error", "failed: "+r.Error
		case r.Unchanged:
			what = "unchanged"
		}
		w.s(`<p class="`, class, `">`)
		w.e(fmt.Sprintf("Last reload (%s) %s: %s", r.Reason, ago(r.At), what))
		w.s("</p>\n")
	} else {
		w.s("<p>No reload since start.</p>\n")
	}
	if len(st.PendingPins) > 0 {
		w.s(`<h3>Pending pin approvals</h3>
<table id="pins">
<thead><tr><th>server</th><th>tool</th><th>approved definition</th><th>definition now</th></tr></thead>
`)
		for _, p := range st.PendingPins {
			w.s("<tr><td>")
			w.e(p.Server)
			w.s("</td><td>")
			w.e(p.Tool)
			w.s("</td><td><code>")
			w.e(short(p.Pinned))
			w.s("</code></td><td><code>")
			w.e(short(p.Pending))
			w.s("</code></td></tr>\n")
		}
		w.s("</table>\n<p class=\"hint\">Approve with <code>switchboard pins approve</code>.</p>\n")
	}
	w.s("</section>\n")
}

func tools(w *writer, d *pageData) {
	w.s(`<section id="tools-section">
<h2>Tools</h2>
<form method="get" action="/" id="filter">
<select name="view">`)
	for _, v := range d.Views {
		w.s("<option")
		if v == d.View {
			w.s(" selected")
		}
		w.s(">")
		w.e(v)
		w.s("</option>")
	}
	w.s(`</select>
<input type="search" name="q" id="q" value="`)
	w.e(d.Q)
	w.s(`" placeholder="filter by name or server">
<button>Filter</button>
</form>
<table id="tools" data-live>
<thead><tr><th>tool</th><th>server</th><th>its name there</th><th>shown</th></tr></thead>
<tbody>
`)
	for _, t := range d.Tools {
		if t.Hidden != "" {
			w.s(`<tr class="hidden-tool">`)
		} else {
			w.s("<tr>")
		}
		for _, c := range []string{t.Public, t.Server, t.Original} {
			w.s("<td>")
			w.e(c)
			w.s("</td>")
		}
		w.s("<td>")
		if t.Hidden != "" {
			w.e("hidden: " + t.Hidden)
		} else {
			w.s("yes")
		}
		w.s("</td></tr>\n")
	}
	w.s("</tbody>\n<caption>")
	w.e(fmt.Sprintf("%d of %d in view %s", len(d.Tools), d.ToolsAll, d.View))
	w.s("</caption>\n</table>\n</section>\n")
}
