package upstream

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"slices"
	"strings"
)

// Egress: a remote server's configured headers (resolved secrets, such as
// Authorization) go only to the origin of its configured URL. A redirect to
// another origin is refused unless Spec.FollowRedirects allows it, and even
// then it carries none of the configured headers; a legacy SSE endpoint
// event naming another origin is refused. Spec.EgressAllow, when set, bounds
// every request the server's client sends, redirects included. See
// "Security, round three", item 1.

// What a remote server's redirects may do (Spec.FollowRedirects).
const (
	// RedirectSameOrigin follows redirects within the configured URL's
	// origin (scheme, host and port) only. "" means this.
	RedirectSameOrigin = "same-origin"
	// RedirectAny follows redirects to any origin; configured headers are
	// still sent only to the configured origin.
	RedirectAny = "any"
	// RedirectNone follows no redirect at all.
	RedirectNone = "none"
)

// maxRedirects is as many redirects as one request follows, as
// net/http's default.
const maxRedirects = 10

// ErrEgress matches (with errors.Is) a request switchboard refused to send:
// a redirect or an SSE endpoint to another origin, or an origin not on the
// egress allow-list.
var ErrEgress = errors.New("egress refused")

// origin is a URL's scheme, host and port: lower case, the port explicit.
type origin struct{ scheme, host, port string }

func originOf(u *neturl.URL) origin {
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port()}
	if o.port == "" {
		o.port = defaultPort(o.scheme)
	}
	return o
}

// String never holds a path, query or user info: only what names the origin.
func (o origin) String() string { return o.scheme + "://" + net.JoinHostPort(o.host, o.port) }

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// OriginPattern is one entry of an egress allow-list, lower case. Scheme
// is "http" or "https"; Host a name or an IP address (IPv6 without
// brackets), "*" (any host) or "*.example.com" (any name below
// example.com, not example.com itself); Port a number, "*" (any) or ""
// (the scheme's default). proxy/config parses the written form,
// scheme://host[:port].
type OriginPattern struct {
	Scheme, Host, Port string
}

func (p OriginPattern) match(o origin) bool {
	port := p.Port
	if port == "" {
		port = defaultPort(p.Scheme)
	}
	if p.Scheme != o.scheme || (port != "*" && port != o.port) {
		return false
	}
	switch {
	case p.Host == "*":
		return true
	case strings.HasPrefix(p.Host, "*."):
		return strings.HasSuffix(o.host, p.Host[1:])
	}
	return p.Host == o.host
}

// egress decides where one remote server's requests may go.
type egress struct {
	server    string // for errors
	kind      string // TransportSSE or TransportHTTP, for errors
	home      origin // the configured URL's
	redirects string // a Redirect* value; "" is RedirectSameOrigin
	allow     []OriginPattern
}

// newEgress builds the rules for a server reached at url (already checked
// by checkURL). It refuses a configured URL whose origin is not on the
// allow-list, permanently: only a config change can help.
func newEgress(sp Spec, kind, url string) (*egress, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, Permanent(errors.New("url: not a URL once its references are expanded"))
	}
	e := &egress{server: sp.Name, kind: kind, home: originOf(u), redirects: sp.FollowRedirects, allow: sp.EgressAllow}
	if !e.allowed(e.home) {
		return nil, Permanent(e.refuse("its url's origin %s is not on the egress allow-list", e.home))
	}
	return e, nil
}

func (e *egress) allowed(o origin) bool {
	return len(e.allow) == 0 || slices.ContainsFunc(e.allow, func(p OriginPattern) bool { return p.match(o) })
}

func (e *egress) refuse(format string, args ...any) error {
	return fmt.Errorf("upstream %q: %w: %s", e.server, ErrEgress, fmt.Sprintf(format, args...))
}

// permit checks one request about to be sent: its origin is on the
// allow-list, and it is the configured origin unless it is a redirect that
// FollowRedirects allows. A request that is no redirect reaches another
// origin only when a legacy SSE server's endpoint event named it.
func (e *egress) permit(r *http.Request) error {
	o := originOf(r.URL)
	if !e.allowed(o) {
		return e.refuse("%s is not on the egress allow-list", o)
	}
	switch {
	case o == e.home:
		return nil
	case r.Response == nil && e.kind == TransportSSE:
		return e.refuse("the SSE endpoint event names %s, another origin than the server's %s", o, e.home)
	case r.Response == nil:
		return e.refuse("request to %s, another origin than the server's %s", o, e.home)
	case e.redirects != RedirectAny:
		return e.refuse("redirect to another origin %s (followRedirects is %q; \"any\" follows it, without the configured headers)", o, e.redirectMode())
	}
	return nil
}

func (e *egress) redirectMode() string {
	if e.redirects == "" {
		return RedirectSameOrigin
	}
	return e.redirects
}

// checkRedirect is the http.Client's CheckRedirect: req is the redirect
// about to be sent.
func (e *egress) checkRedirect(req *http.Request, via []*http.Request) error {
	if e.redirects == RedirectNone {
		return e.refuse("redirect to %s (followRedirects is \"none\")", originOf(req.URL))
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("upstream %q: stopped after %d redirects", e.server, maxRedirects)
	}
	return e.permit(req)
}

// checkAllowed is the CheckRedirect of requests to other origins than the
// server's own (its authorization server): the allow-list only.
func (e *egress) checkAllowed(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("upstream %q: stopped after %d redirects", e.server, maxRedirects)
	}
	if o := originOf(req.URL); !e.allowed(o) {
		return e.refuse("redirect to %s, not on the egress allow-list", o)
	}
	return nil
}
