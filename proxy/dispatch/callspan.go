package dispatch

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
)

// callSpan starts the child span of one upstream call and returns the _meta
// that carries its trace context to the upstream.
func (d *Dispatcher) callSpan(ctx context.Context, r *view.Route, meta mcp.Meta) (context.Context, trace.Span, mcp.Meta) {
	// With tracing off there is no span of our own; an incoming trace
	// context still travels on as the context's span.
	span := trace.SpanFromContext(ctx)
	tel := d.serving.genOr(ctx).Tel
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
