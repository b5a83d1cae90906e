package dispatch

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcp-switchboard/switchboard/proxy/session"
	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/proxy/view"
)

// TestTraceContextCrossesWithTracingOff: with no exporter configured,
// nothing is recorded, but a caller's trace context (HTTP header or _meta)
// still reaches the upstream call's _meta unchanged.
func TestTraceContextCrossesWithTracingOff(t *testing.T) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	p := &Dispatcher{serving: NewServing(NewGen(nil, nil, Access{}, Observers{Tel: &telemetry.Telemetry{Tracer: noop.NewTracerProvider().Tracer("test")}}))}
	r := &view.Route{Original: "echo", Entry: &view.ServerEntry{Key: "s"}}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	for name, req := range map[string]*session.Request{
		"header": {Method: "tools/call", Params: json.RawMessage(`{"name":"mcp_s_echo"}`), Extra: &session.Extra{Header: http.Header{"Traceparent": {tp}}}},
		"_meta":  {Method: "tools/call", Params: json.RawMessage(`{"name":"mcp_s_echo","_meta":{"traceparent":"` + tp + `"}}`)},
	} {
		var meta mcp.Meta
		next := func(ctx context.Context, _ *session.Request) (any, error) {
			_, span, m := p.callSpan(ctx, r, nil)
			span.End()
			meta = m
			return &mcp.CallToolResult{}, nil
		}
		if _, err := p.traced("tools/call", next)(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if got, _ := meta["traceparent"].(string); !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
			t.Errorf("%s: upstream _meta traceparent %q, want the caller's trace", name, got)
		}
	}

	var meta mcp.Meta
	next := func(ctx context.Context, _ *session.Request) (any, error) {
		_, _, meta = p.callSpan(ctx, r, nil)
		return &mcp.CallToolResult{}, nil
	}
	if _, err := p.traced("tools/call", next)(context.Background(), &session.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"mcp_s_echo"}`)}); err != nil {
		t.Fatal(err)
	}
	if meta != nil {
		t.Errorf("no incoming trace context, yet upstream _meta %v", meta)
	}
}
