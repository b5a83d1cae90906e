package oauth

import (
	"errors"
	"net/http"
	"strings"
)

// consentCookie prefixes the cookie that binds a started flow to the
// browser that started it; one per flow (the flow's id ends its name),
// so that flows started in one browser at once do not overwrite each
// other's.
const consentCookie = "switchboard_consent_"

// StartHandler serves a flow's start URL (its id is the path's last
// segment): the caller principal reports (from the request's
// credentials, as for /mcp) must be the one the flow was opened for; the
// browser is then given the flow's binding cookie and redirected to the
// authorization server.
func (c *Consents) StartHandler(principal func(*http.Request) (string, bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "consent start: GET only", http.StatusMethodNotAllowed)
			return
		}
		p, ok := principal(r)
		if !ok {
			http.Error(w, "consent start: no caller: sign in as the caller whose call asked for consent", http.StatusUnauthorized)
			return
		}
		id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		authURL, binding, err := c.Start(id, p)
		if err != nil {
			http.Error(w, "consent start: "+err.Error(), statusOf(err))
			return
		}
		http.SetCookie(w, &http.Cookie{Name: consentCookie + id[:16], Value: binding, Path: "/", HttpOnly: true,
			Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode, MaxAge: int(c.ttl.Seconds())})
		http.Redirect(w, r, authURL, http.StatusFound)
	})
}

// CallbackHandler serves the redirect URI: the authorization server's
// answer completes the flow its state names, at the browser that started
// it, and the flow's fetcher exchanges the code.
func (c *Consents) CallbackHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("consent to " + f.Server + " given: you may close this window and retry the call\n"))
	})
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
