package upstream

import (
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// headerTransport adds the server's configured headers to every request:
// POSTs, the standalone GET stream and DELETE.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

// It also carries the caller's trace context (W3C traceparent) when the
// request's context holds a span: the SDK builds each POST on the calling
// context.
func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	sc := trace.SpanContextFromContext(r.Context())
	if len(t.headers) == 0 && !sc.IsValid() {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range t.headers {
		r.Header[k] = vs
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

func httpClient(headers map[string]string) *http.Client {
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	return &http.Client{Transport: &headerTransport{base: sharedTransport, headers: h}}
}

// remoteTransport reaches a remote server: legacy SSE through the go-sdk's
// client transport (it needs nothing of the SDK's session), streamable HTTP
// through switchboard's own, whose connection the client session drives.
func remoteTransport(kind, url string, headers map[string]string, log hclog.Logger) mcp.Transport {
	hc := httpClient(headers)
	if kind == TransportSSE {
		return &mcp.SSEClientTransport{Endpoint: url, HTTPClient: hc}
	}
	return &streamableTransport{URL: url, Client: hc, Logger: log}
}
