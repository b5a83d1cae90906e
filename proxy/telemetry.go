package proxy

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	promexp "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcp-switchboard/switchboard/proxy/config"
	"github.com/mcp-switchboard/switchboard/upstream"
)

// Attribute keys, following the OpenTelemetry semantic conventions for MCP
// and GenAI where they exist.
const (
	attrMethod    = attribute.Key("mcp.method.name")
	attrSession   = attribute.Key("mcp.session.id")
	attrTool      = attribute.Key("gen_ai.tool.name")
	attrServer    = attribute.Key("mcp.server.name") // the upstream's config key
	attrOutcome   = attribute.Key("switchboard.outcome")
	attrView      = attribute.Key("switchboard.view")
	attrErrorType = attribute.Key("error.type")
)

// telemetry holds the tracer and the instruments. Traces export over OTLP
// only when the standard OTEL_* variables ask for it; metrics are always
// kept for /metrics, and also exported over OTLP when asked.
type telemetry struct {
	tracer   trace.Tracer
	tracing  bool // spans are recorded; else tracer is a no-op that only carries context
	registry *promclient.Registry
	metrics  http.Handler // serves registry
	shutdown []func(context.Context) error

	calls         metric.Int64Counter
	duration      metric.Float64Histogram
	denials       metric.Int64Counter
	suspicious    metric.Int64Counter
	pinViolations metric.Int64Counter
	reloads       metric.Int64Counter
	rateLimited   metric.Int64Counter
}

// otlpRequested reports whether the environment configures an OTLP exporter
// for a signal ("TRACES" or "METRICS").
func otlpRequested(signal string) bool {
	if v := os.Getenv("OTEL_" + signal + "_EXPORTER"); v != "" {
		return v != "none"
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

func newTelemetry(ctx context.Context, c *config.Config, p *Proxy) (*telemetry, error) {
	t := &telemetry{registry: promclient.NewRegistry()}
	name := "switchboard"
	if c.Telemetry != nil && c.Telemetry.ServiceName != "" {
		name = c.Telemetry.ServiceName
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(Version)))
	if err != nil {
		res = resource.Default()
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { p.log.Warn("telemetry export", "error", err) }))

	t.tracer = noop.NewTracerProvider().Tracer("switchboard")
	if otlpRequested("TRACES") {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, &ConfigError{errors.New("OTEL_* trace exporter: " + err.Error())}
		}
		// The sampler comes from OTEL_TRACES_SAMPLER (the SDK reads it).
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.tracer = tp.Tracer("switchboard")
		t.tracing = true
		otel.SetTracerProvider(tp)
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}

	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	prometheus := c.Telemetry == nil || c.Telemetry.Prometheus == nil || *c.Telemetry.Prometheus
	if prometheus {
		exp, err := promexp.New(promexp.WithRegisterer(t.registry), promexp.WithoutScopeInfo(), promexp.WithoutTargetInfo())
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdkmetric.WithReader(exp))
	}
	if otlpRequested("METRICS") {
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, &ConfigError{errors.New("OTEL_* metric exporter: " + err.Error())}
		}
		opts = append(opts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	t.shutdown = append(t.shutdown, mp.Shutdown)
	m := mp.Meter("switchboard")
	durations := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
	var errs []error
	must := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	t.calls, err = m.Int64Counter("switchboard_tool_calls", metric.WithDescription("Tool calls by server, tool and outcome."))
	must(err)
	t.duration, err = m.Float64Histogram("switchboard_tool_call_duration", metric.WithUnit("s"), metric.WithDescription("Tool call duration through the proxy."), durations)
	must(err)
	t.denials, err = m.Int64Counter("switchboard_policy_denials", metric.WithDescription("Calls to tools hidden by policy or unknown."))
	must(err)
	t.suspicious, err = m.Int64Counter("switchboard_sanitize_suspicious", metric.WithDescription("Suspicious patterns found in upstream content, by pattern."))
	must(err)
	t.pinViolations, err = m.Int64Counter("switchboard_sanitize_pin_violations", metric.WithDescription("Tool definitions that changed since they were pinned."))
	must(err)
	t.reloads, err = m.Int64Counter("switchboard_config_reloads", metric.WithDescription("Config reloads by result."))
	must(err)
	t.rateLimited, err = m.Int64Counter("switchboard_policy_rate_limited", metric.WithDescription("Calls refused by a rate limit."))
	must(err)
	sessions, err := m.Int64ObservableGauge("switchboard_proxy_sessions", metric.WithDescription("Active downstream sessions per view."))
	must(err)

	states := []upstream.State{upstream.StateIdle, upstream.StateStarting, upstream.StateReady, upstream.StateRestarting, upstream.StateFailed, upstream.StateStopped}
	stateGauge, err := m.Int64ObservableGauge("switchboard_upstream_state", metric.WithDescription("1 for each server's current state."))
	must(err)
	restarts, err := m.Int64ObservableCounter("switchboard_upstream_restarts", metric.WithDescription("Restarts per server."))
	must(err)
	breaker, err := m.Int64ObservableGauge("switchboard_upstream_breaker_open", metric.WithDescription("1 while a server's circuit breaker is open or half-open."))
	must(err)
	tools, err := m.Int64ObservableGauge("switchboard_upstream_tools", metric.WithDescription("Tools each server lists."))
	must(err)
	listFailures, err := m.Int64ObservableCounter("switchboard_upstream_list_failures",
		metric.WithDescription("Failed listings of a server's prompts, resources or resource templates (its tools are served meanwhile), by list."))
	must(err)
	partial, err := m.Int64ObservableGauge("switchboard_upstream_catalog_partial", metric.WithDescription("1 while a server's catalog lacks a list that failed."))
	must(err)
	lastReload, err := m.Int64ObservableGauge("switchboard_config_last_reload_success", metric.WithDescription("1 if the last reload succeeded."))
	must(err)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		snap := p.cur.Load()
		if snap == nil {
			return nil
		}
		for key, h := range snap.Handles {
			st := h.Status()
			server := attribute.String("server", key)
			for _, s := range states {
				v := int64(0)
				if st.State == s {
					v = 1
				}
				o.ObserveInt64(stateGauge, v, metric.WithAttributes(server, attribute.String("state", string(s))))
			}
			o.ObserveInt64(restarts, int64(st.Restarts), metric.WithAttributes(server))
			open := int64(0)
			if st.Breaker != "closed" {
				open = 1
			}
			o.ObserveInt64(breaker, open, metric.WithAttributes(server))
			o.ObserveInt64(tools, int64(st.Tools), metric.WithAttributes(server))
			for list, n := range st.ListFailures {
				o.ObserveInt64(listFailures, int64(n), metric.WithAttributes(server, attribute.String("list", list)))
			}
			if st.Catalog != "" {
				v := int64(0)
				if st.Catalog == upstream.CatalogPartial {
					v = 1
				}
				o.ObserveInt64(partial, v, metric.WithAttributes(server))
			}
		}
		ok := int64(1)
		if lr := p.lastReload.Load(); lr != nil && !lr.OK {
			ok = 0
		}
		o.ObserveInt64(lastReload, ok)
		for id, v := range *p.views.Load() {
			n := int64(v.sessionCount())
			if id == "" {
				id = "default"
			}
			o.ObserveInt64(sessions, n, metric.WithAttributes(attribute.String("view", id)))
		}
		return nil
	}, stateGauge, restarts, breaker, tools, listFailures, partial, lastReload, sessions)
	if err != nil {
		return nil, err
	}
	t.metrics = promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
	return t, nil
}

func (t *telemetry) metricsHandler() http.Handler { return t.metrics }

func (t *telemetry) close(ctx context.Context) {
	for _, f := range t.shutdown {
		_ = f(ctx)
	}
}

func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "jsonrpc_error"
}

// callSpan starts the child span of one upstream call and returns the _meta
// that carries its trace context to the upstream.
func (p *Proxy) callSpan(ctx context.Context, r *route, meta mcp.Meta) (context.Context, trace.Span, mcp.Meta) {
	// With tracing off there is no span of our own; an incoming trace
	// context still travels on as the context's span.
	span := trace.SpanFromContext(ctx)
	if p.tel.Load().tracing {
		ctx, span = p.tel.Load().tracer.Start(ctx, "tools/call "+r.original, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrMethod.String("tools/call"), attrTool.String(r.original), attrServer.String(r.entry.Key)))
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

// callAttrs are the metric attribute sets of one public tool, built once
// per route: the duration's, and the call counter's for the usual outcome.
type callAttrs struct {
	server, tool string
	duration, ok metric.MeasurementOption
}

func newCallAttrs(server, tool string) *callAttrs {
	return &callAttrs{
		server: server, tool: tool,
		duration: metric.WithAttributeSet(attribute.NewSet(attribute.String("server", server), attribute.String("tool", tool))),
		ok:       metric.WithAttributeSet(attribute.NewSet(attribute.String("server", server), attribute.String("tool", tool), attribute.String("outcome", "ok"))),
	}
}

// record counts one finished tool call.
func (t *telemetry) record(ctx context.Context, a *callAttrs, outcome string, d time.Duration) {
	calls := a.ok
	if outcome != "ok" {
		calls = metric.WithAttributes(attribute.String("server", a.server), attribute.String("tool", a.tool), attribute.String("outcome", outcome))
	}
	t.calls.Add(ctx, 1, calls)
	t.duration.Record(ctx, d.Seconds(), a.duration)
}

func (t *telemetry) countSuspicious(ctx context.Context, server, pattern string) {
	t.suspicious.Add(ctx, 1, metric.WithAttributes(attribute.String("server", server), attribute.String("pattern", pattern)))
}
