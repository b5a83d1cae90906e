package upstream

import (
	"net"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

// headerTransport adds the server's configured headers to every request
// to the configured origin: POSTs, the standalone GET stream and DELETE.
// With eg set it first checks each request against the egress rules
// (egress.go), and sends a request to another origin (a redirect the rules
// allow) without the configured headers.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	eg      *egress
}

// It also carries the caller's trace context (W3C traceparent) when the
// request's context holds a span: the SDK builds each POST on the calling
// context.
func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	home := true
	if t.eg != nil {
		if err := t.eg.permit(r); err != nil {
			if r.Body != nil {
				r.Body.Close() // as a RoundTripper must, even on error
			}
			return nil, err
		}
		home = originOf(r.URL) == t.eg.home
	}
	sc := trace.SpanContextFromContext(r.Context())
	if len(t.headers) == 0 && !sc.IsValid() {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range t.headers {
		if home {
			r.Header[k] = vs
		} else {
			delete(r.Header, k) // whoever set it, it is not for this origin
		}
	}
	if sc.IsValid() {
		otel.GetTextMapPropagator().Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	}
	return t.base.RoundTrip(r)
}

// sharedTransport is the connection pool for every HTTP upstream. It sets
// dial, TLS and idle timeouts only: an http.Client.Timeout would cut long
// SSE responses, including slow tool calls and the standalone stream.
var sharedTransport = &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	ForceAttemptHTTP2:     true,
	MaxIdleConns:          256,
	MaxIdleConnsPerHost:   64,
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
	ExpectContinueTimeout: time.Second,
}

func httpClient(server string, headers map[string]string, eg *egress, ah auth.OAuthHandler) *http.Client {
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	var base http.RoundTripper = sharedTransport
	if ah != nil {
		home := func(u *neturl.URL) bool { return eg == nil || originOf(u) == eg.home }
		base = &oauth.Transport{Base: sharedTransport, Handler: ah, Home: home, Server: server}
	}
	return &http.Client{Transport: &headerTransport{base: base, headers: h, eg: eg}, CheckRedirect: eg.checkRedirect}
}

// remoteTransport reaches a remote server: legacy SSE through the go-sdk's
// client transport (it needs nothing of the SDK's session), streamable HTTP
// through switchboard's own, whose connection the client session drives.
// Every request of either goes through the server's egress rules.
func remoteTransport(sp Spec, kind, url string, headers map[string]string, ah auth.OAuthHandler, log hclog.Logger) (mcp.Transport, error) {
	eg, err := newEgress(sp, kind, url)
	if err != nil {
		return nil, err
	}
	hc := httpClient(sp.Name, headers, eg, ah)
	if kind == TransportSSE {
		return &mcp.SSEClientTransport{Endpoint: url, HTTPClient: hc}, nil
	}
	return &streamableTransport{URL: url, Client: hc, Logger: log}, nil
}
