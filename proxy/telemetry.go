package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// newTelemetry sets up telemetry for c; its gauges observe the proxy.
func (p *Proxy) newTelemetry(ctx context.Context, c *config.Config) (*telemetry.Telemetry, error) {
	o := telemetry.Options{Version: Version, Prometheus: true, Log: p.log, Observe: p.observe}
	if t := c.Telemetry; t != nil {
		o.ServiceName = t.ServiceName
		o.Prometheus = t.Prometheus == nil || *t.Prometheus
	}
	t, err := telemetry.New(ctx, o)
	if err != nil {
		return nil, &ConfigError{err}
	}
	return t, nil
}

// observe is the state the gauges show.
func (p *Proxy) observe() telemetry.Observation {
	obs := telemetry.Observation{LastReloadOK: true, Servers: map[string]upstream.Status{}, Sessions: map[string]int{}}
	cur := p.serving.Load()
	if snap := cur.snap; snap != nil {
		for key, h := range snap.Handles {
			obs.Servers[key] = h.Status()
		}
	}
	if lr := p.lastReload.Load(); lr != nil && !lr.OK {
		obs.LastReloadOK = false
	}
	counts := p.sessionCounts()
	for id := range cur.views {
		name := id
		if name == "" {
			name = "default"
		}
		obs.Sessions[name] = counts[id]
	}
	return obs
}

// callSpan starts the child span of one upstream call and returns the _meta
// that carries its trace context to the upstream.
func (p *Proxy) callSpan(ctx context.Context, r *view.Route, meta mcp.Meta) (context.Context, trace.Span, mcp.Meta) {
	// With tracing off there is no span of our own; an incoming trace
	// context still travels on as the context's span.
	span := trace.SpanFromContext(ctx)
	tel := p.tel.Load()
	if tel.Tracing {
		ctx, span = tel.Tracer.Start(ctx, "tools/call "+r.Original, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(telemetry.AttrMethod.String("tools/call"), telemetry.AttrTool.String(r.Original), telemetry.AttrServer.String(r.Entry.Key)))
	}
	if span.SpanContext().IsValid() {
		carrier := propagation.MapCarrier{}
		otel.GetTextMapPropagator().Inject(ctx, carrier)
		if meta == nil {
			meta = mcp.Meta{}
		}
		for k, v := range carrier {
			meta[k] = v
		}
	}
	return ctx, span, meta
}
