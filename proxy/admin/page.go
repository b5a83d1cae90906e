package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The status page: one HTML document rendered on the server (render.go)
// from the value /status encodes, so it works without JavaScript; page.js
// refreshes it every second by fetching the page again. Script and style
// are files of their own, so the Content-Security-Policy allows no inline
// code at all.

//go:embed page
var pageFiles embed.FS

// pageCSP is the Content-Security-Policy of everything the page serves:
// nothing from another origin, no inline script or style, no framing.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// cookieName is the cookie that carries the page's proof of the admin token.
const cookieName = "switchboard_admin"

// Tool is one row of a view's tool table on the status page.
type Tool struct {
	Public, Server, Original string
	// Hidden is why the view does not publish the tool ("policy", "pin",
	// "trust"); "" for a published tool.
	Hidden string
}

// pageData is what render writes.
type pageData struct {
	TokenSet   bool // an admin token is configured: login and restarts exist
	Authorized bool // the whole page, not only health
	Failed     bool // a login with a wrong token
	Ready      Readiness
	S          *pageStatus // the /status value, through its JSON
	Views      []string
	View, Q    string
	Tools      []Tool
	ToolsAll   int // before the filter
	Restarted  string
}

// page serves GET /.
func page(b Backend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		tok := b.ReloadToken()
		d := pageData{TokenSet: tok != "", Ready: b.Readiness(), Failed: q.Get("login") == "failed"}
		d.Authorized = tok == "" || cookieOK(r, tok)
		if d.Authorized {
			d.Restarted = q.Get("restarted")
			if err := fill(&d, b, q.Get("view"), q.Get("q")); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		pageHeaders(w, "text/html; charset=utf-8")
		_, _ = w.Write([]byte(render(&d)))
	}
}

// fill reads the /status value through JSON, so the page shows exactly
// what /status shows, and the tools of the view asked for.
func fill(d *pageData, b Backend, view, q string) error {
	raw, err := json.Marshal(b.Status())
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	d.S = &pageStatus{}
	if err := json.Unmarshal(raw, d.S); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	d.Views = slices.Sorted(maps.Keys(d.S.Views))
	if _, ok := d.S.Views[view]; !ok && len(d.Views) > 0 {
		view = d.Views[0]
		if _, ok := d.S.Views["default"]; ok {
			view = "default"
		}
	}
	d.View, d.Q = view, q
	tools, _ := b.Tools(view)
	d.ToolsAll = len(tools)
	needle := strings.ToLower(q)
	for _, t := range tools {
		if needle == "" || strings.Contains(strings.ToLower(t.Public+" "+t.Server+" "+t.Original), needle) {
			d.Tools = append(d.Tools, t)
		}
	}
	return nil
}

// asset serves an embedded file of the page.
func asset(name, ctype string) http.HandlerFunc {
	body, err := pageFiles.ReadFile("page/" + name)
	if err != nil {
		panic(err) // embedded: present at build time
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		pageHeaders(w, ctype)
		_, _ = w.Write(body)
	}
}

func pageHeaders(w http.ResponseWriter, ctype string) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make forms post Origin: null
	h.Set("Cache-Control", "no-store")
}

// login serves POST /login: a form with the admin token. The right token
// sets the page cookie; a wrong one goes back to the page, saying so.
func login(b Backend) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		want := b.ReloadToken()
		if want == "" || !sameOrigin(r) {
			http.NotFound(w, r)
			return
		}
		got := r.PostFormValue("token")
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			http.Redirect(w, r, "/?login=failed", http.StatusSeeOther)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: proof(want), Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, MaxAge: int((12 * time.Hour).Seconds())})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}
}

// logout serves POST /logout: the cookie goes.
func logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// proof is the cookie's value for token: a keyed digest, not the token,
// so the cookie cannot be replayed as a bearer token, and a new token
// ends every page session.
func proof(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("switchboard status page"))
	return hex.EncodeToString(m.Sum(nil))
}

// cookieOK reports whether r carries the page cookie for token (set).
func cookieOK(r *http.Request, token string) bool {
	c, err := r.Cookie(cookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(proof(token))) == 1
}

// sameOrigin refuses a form posted from another origin: the cookie is
// SameSite=Strict already; a browser that sends Origin is checked too.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// ago is how long ago t was, in whole seconds; "" for no time.
func ago(t time.Time) string {
	if t.Year() < 2000 {
		return ""
	}
	return time.Since(t).Truncate(time.Second).String() + " ago"
}

// spark is the points of an SVG polyline 140×24 drawing counts, scaled
// to the largest.
func spark(counts []int64) string {
	top := int64(1)
	for _, c := range counts {
		top = max(top, c)
	}
	pts := make([]string, len(counts))
	for i, c := range counts {
		pts[i] = fmt.Sprintf("%d,%.1f", i*10, 23-22*float64(c)/float64(top))
	}
	return strings.Join(pts, " ")
}

// sum adds counts.
func sum(counts []int64) int64 {
	var t int64
	for _, c := range counts {
		t += c
	}
	return t
}

// short is the first 16 characters of a definition hash, as `switchboard
// pins list` prints it.
func short(h string) string { return h[:min(len(h), 16)] }

// pathEscape escapes a server name for the restart form's action.
func pathEscape(s string) string { return url.PathEscape(s) }
