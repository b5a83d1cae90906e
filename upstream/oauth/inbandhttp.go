package oauth

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
)

// consentCookie prefixes the cookie that binds a started flow to the
// browser that started it; one per flow (the flow's id ends its name),
// so that flows started in one browser at once do not overwrite each
// other's.
const consentCookie = "switchboard_consent_"

// StartHandler serves a flow's start URL (its id is the path's last
// segment). A flow of switchboard's own token (no principal) starts at
// once: the browser is given the flow's binding cookie and redirected to
// the authorization server. A flow of a caller's own token (linked
// accounts) first shows whose account is being linked, with a button: a
// browser cannot prove it is the caller, so the person who opens a URL
// someone else was sent sees it names another, and the start is a POST,
// which a link or an image cannot make.
func (c *Consents) StartHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		browserHeaders(w.Header())
		id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		server, principal, label, ok := c.Peek(id)
		if !ok {
			http.Error(w, "consent start: "+ErrFlowUnknown.Error(), http.StatusNotFound)
			return
		}
		switch {
		case r.Method == http.MethodGet && principal != "":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			// Its form's POST must keep its Origin (no-referrer would send
			// "null", which the cross-origin check refuses for a browser
			// without Sec-Fetch-Site); nothing goes to another origin with
			// a Referer all the same.
			w.Header().Set("Referrer-Policy", "same-origin")
			fmt.Fprintf(w, confirmPage, html.EscapeString(server), html.EscapeString(label))
			return
		case r.Method == http.MethodGet, r.Method == http.MethodPost && principal != "":
		default:
			http.Error(w, "consent start: GET (or POST to confirm) only", http.StatusMethodNotAllowed)
			return
		}
		authURL, binding, err := c.Start(id, principal)
		if err != nil {
			http.Error(w, "consent start: "+err.Error(), statusOf(err))
			return
		}
		http.SetCookie(w, &http.Cookie{Name: consentCookie + id[:16], Value: binding, Path: "/", HttpOnly: true,
			Secure: r.TLS != nil || httpsCallback(authURL), SameSite: http.SameSiteLaxMode, MaxAge: int(c.ttl.Seconds())})
		http.Redirect(w, r, authURL, http.StatusFound)
	})
}

// confirmPage asks the person to confirm whose account they link: the
// server's name, then the caller's, each escaped. (No html/template: its
// reflection would keep every exported method in the binary.)
const confirmPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>switchboard: link %[1]s</title></head>
<body>
<h1>Link your %[1]s account</h1>
<p>switchboard asks to act at <b>%[1]s</b> for <b>%[2]s</b>, who made the call that needs it.</p>
<p>If that is not you, close this page: whoever sent you here would act with your account.</p>
<form method="post"><button type="submit">Continue to %[1]s</button></form>
</body></html>
`

// CallbackHandler serves the redirect URI: the authorization server's
// answer completes the flow its state names, at the browser that started
// it, and the flow's fetcher exchanges the code.
func (c *Consents) CallbackHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		browserHeaders(w.Header())
		q := r.URL.Query()
		var bindings []string
		for _, k := range r.Cookies() {
			if strings.HasPrefix(k.Name, consentCookie) {
				bindings = append(bindings, k.Value)
			}
		}
		if e := q.Get("error"); e != "" {
			// The person declined, or the authorization server refused:
			// the flow ends without a code.
			if f, err := c.Complete(q.Get("state"), bindings, "", ""); err == nil {
				http.Error(w, "consent to "+f.Server+" refused by the authorization server: "+e, http.StatusForbidden)
				return
			}
			http.Error(w, "consent callback: "+e, http.StatusBadRequest)
			return
		}
		if q.Get("code") == "" || q.Get("state") == "" {
			http.Error(w, "consent callback: the redirect carries no code or no state", http.StatusBadRequest)
			return
		}
		f, err := c.Complete(q.Get("state"), bindings, q.Get("code"), q.Get("iss"))
		if err != nil {
			http.Error(w, "consent callback: "+err.Error(), statusOf(err))
			return
		}
		// The person is told what came of the code: it may yet be
		// refused (at the token endpoint, or for an iss naming another
		// issuer). Why is not said: it is the operator's to read.
		msg := "consent to " + f.Server + " given: you may close this window and retry the call\n"
		switch ended, err := f.settled(r.Context()); {
		case ended && err != nil:
			http.Error(w, "consent to "+f.Server+" not completed: switchboard could not use the authorization server's answer; retry the call to be asked again", http.StatusBadGateway)
			return
		case !ended && f.outcome != nil:
			msg = "consent to " + f.Server + " received: you may close this window; the call is retried once switchboard has the token\n"
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(msg))
	})
}

// browserHeaders are the headers of every answer of the start and
// callback routes: their URLs and pages carry a flow's capability (its
// ID, the code and state of the redirect), which no cache may keep and
// no Referer may carry on (RFC 9700 §4.2.4), and no page of theirs may
// be framed (clickjacking of the confirm button). The policy has no
// form-action: browsers apply it to the redirects that follow a form's
// POST too, and the confirm page's POST is redirected to the
// authorization server (and on, to wherever it sends the person); with
// no script and a form without an action, it would restrict nothing.
func browserHeaders(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
}

// httpsCallback reports whether the redirect URI authURL sends the
// authorization server's answer to is https: switchboard behind a proxy
// that ends TLS sees plain HTTP, and the binding cookie must still be
// Secure.
func httpsCallback(authURL string) bool {
	u, err := url.Parse(authURL)
	if err != nil {
		return false
	}
	cb, err := url.Parse(u.Query().Get("redirect_uri"))
	return err == nil && cb.Scheme == "https"
}

// statusOf is the HTTP status of a flow step's error.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrFlowPrincipal), errors.Is(err, ErrFlowBrowser):
		return http.StatusForbidden
	case errors.Is(err, ErrFlowExpired):
		return http.StatusGone
	}
	return http.StatusNotFound
}
