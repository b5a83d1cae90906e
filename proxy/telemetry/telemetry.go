package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// Attribute keys, following the OpenTelemetry semantic conventions for MCP
// and GenAI where they exist.
const (
	AttrMethod    = attribute.Key("mcp.method.name")
	AttrSession   = attribute.Key("mcp.session.id")
	AttrTool      = attribute.Key("gen_ai.tool.name")
	AttrServer    = attribute.Key("mcp.server.name") // the upstream's config key
	AttrOutcome   = attribute.Key("switchboard.outcome")
	AttrView      = attribute.Key("switchboard.view")
	AttrErrorType = attribute.Key("error.type")
)

// Telemetry holds the tracer and the instruments. Traces export over OTLP
// only when the standard OTEL_* variables ask for it; metrics are always
// kept for /metrics, and also exported over OTLP when asked.
type Telemetry struct {
	// Tracer starts spans; with Tracing false it is a no-op that only
	// carries an incoming trace context.
	Tracer   trace.Tracer
	Tracing  bool
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
	auditFailures metric.Int64Counter
}

// Options configure Telemetry.
type Options struct {
	// ServiceName and Version name the service in exported telemetry.
	ServiceName, Version string
	// Prometheus keeps the metrics for /metrics.
	Prometheus bool
	// Log receives export errors.
	Log hclog.Logger
	// Observe reports the state the gauges show; it is called at each
	// collection.
	Observe func() Observation
}

// Observation is the state behind the gauges.
type Observation struct {
	// Servers are the running upstreams by config key.
	Servers map[string]upstream.Status
	// LastReloadOK is false after a failed reload.
	LastReloadOK bool
	// Sessions counts the downstream sessions per view name.
	Sessions map[string]int
}

// New sets up tracing and metrics. Errors name the OTEL_* exporter that
// could not start.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	t := &Telemetry{registry: promclient.NewRegistry()}
	name := o.ServiceName
	if name == "" {
		name = "switchboard"
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(o.Version)))
	if err != nil {
		res = resource.Default()
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { o.Log.Warn("telemetry export", "error", err) }))

	t.Tracer = noop.NewTracerProvider().Tracer("switchboard")
	exp, err := newSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_* trace exporter: %w", err)
	}
	if exp != nil {
		// The sampler comes from OTEL_TRACES_SAMPLER (the SDK reads it).
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.Tracer = tp.Tracer("switchboard")
		t.Tracing = true
		otel.SetTracerProvider(tp)
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}

	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if o.Prometheus {
		exp, err := promexp.New(promexp.WithRegisterer(t.registry), promexp.WithoutScopeInfo(), promexp.WithoutTargetInfo())
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdkmetric.WithReader(exp))
	}
	r, err := newMetricReader(ctx)
	if err != nil {
		t.Close(ctx)
		return nil, fmt.Errorf("OTEL_* metric exporter: %w", err)
	}
	if r != nil {
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
	t.auditFailures, err = m.Int64Counter("switchboard_audit_write_failures", metric.WithDescription("Audit records that could not be written."))
	must(err)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Shown as 0 from the start, so an alert on its rate has a series.
	t.auditFailures.Add(ctx, 0)
	if err := observeGauges(m, o.Observe); err != nil {
		return nil, err
	}
	t.metrics = promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
	return t, nil
}

// observeGauges registers the gauges that read an Observation at each
// collection.
func observeGauges(m metric.Meter, observe func() Observation) error {
	var errs []error
	must := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
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
	inFlight, err := m.Int64ObservableGauge("switchboard_upstream_in_flight", metric.WithDescription("Calls each server has in flight, its per-client instances' included."))
	must(err)
	instances, err := m.Int64ObservableGauge("switchboard_upstream_instances", metric.WithDescription("Instances a server with isolation: per-client runs for sessions."))
	must(err)
	lastReload, err := m.Int64ObservableGauge("switchboard_config_last_reload_success", metric.WithDescription("1 if the last reload succeeded."))
	must(err)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	_, err = m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		if observe == nil {
			return nil
		}
		now := observe()
		for key, st := range now.Servers {
			server := attribute.String("server", key)
			for _, s := range states {
				v := int64(0)
				if st.State == s {
					v = 1
				}
				obs.ObserveInt64(stateGauge, v, metric.WithAttributes(server, attribute.String("state", string(s))))
			}
			obs.ObserveInt64(restarts, int64(st.Restarts), metric.WithAttributes(server))
			open := int64(0)
			if st.Breaker != "closed" {
				open = 1
			}
			obs.ObserveInt64(breaker, open, metric.WithAttributes(server))
			obs.ObserveInt64(tools, int64(st.Tools), metric.WithAttributes(server))
			obs.ObserveInt64(inFlight, st.InFlight, metric.WithAttributes(server))
			if st.Instances != nil {
				obs.ObserveInt64(instances, int64(*st.Instances), metric.WithAttributes(server))
			}
			for list, n := range st.ListFailures {
				obs.ObserveInt64(listFailures, int64(n), metric.WithAttributes(server, attribute.String("list", list)))
			}
			if st.Catalog != "" {
				v := int64(0)
				if st.Catalog == upstream.CatalogPartial {
					v = 1
				}
				obs.ObserveInt64(partial, v, metric.WithAttributes(server))
			}
		}
		ok := int64(0)
		if now.LastReloadOK {
			ok = 1
		}
		obs.ObserveInt64(lastReload, ok)
		for view, n := range now.Sessions {
			obs.ObserveInt64(sessions, int64(n), metric.WithAttributes(attribute.String("view", view)))
		}
		return nil
	}, stateGauge, restarts, breaker, tools, listFailures, partial, inFlight, instances, lastReload, sessions)
	return err
}

// MetricsHandler serves the metrics in the Prometheus text format.
func (t *Telemetry) MetricsHandler() http.Handler { return t.metrics }

// Close flushes and stops the exporters.
func (t *Telemetry) Close(ctx context.Context) {
	for _, f := range t.shutdown {
		_ = f(ctx)
	}
}

// ErrorType names an error for the error.type span attribute.
func ErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "jsonrpc_error"
}

// CallAttrs are the metric attribute sets of one public tool, built once
// per route: the duration's, and the call counter's for the usual outcome,
// each as the option list the instrument takes, so that a call passes them
// without building a list of its own.
type CallAttrs struct {
	server, tool string
	duration     []metric.RecordOption
	ok           []metric.AddOption
}

// NewCallAttrs builds the attribute sets of a tool of server.
func NewCallAttrs(server, tool string) *CallAttrs {
	return &CallAttrs{
		server: server, tool: tool,
		duration: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("server", server), attribute.String("tool", tool)))},
		ok:       []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("server", server), attribute.String("tool", tool), attribute.String("outcome", "ok")))},
	}
}

// RecordCall counts one finished tool call.
func (t *Telemetry) RecordCall(ctx context.Context, a *CallAttrs, outcome string, d time.Duration) {
	calls := a.ok
	if outcome != "ok" {
		calls = []metric.AddOption{metric.WithAttributes(attribute.String("server", a.server), attribute.String("tool", a.tool), attribute.String("outcome", outcome))}
	}
	t.calls.Add(ctx, 1, calls...)
	t.duration.Record(ctx, d.Seconds(), a.duration...)
}

// Suspicious counts one suspicious pattern found in a server's content.
func (t *Telemetry) Suspicious(ctx context.Context, server, pattern string) {
	t.suspicious.Add(ctx, 1, metric.WithAttributes(attribute.String("server", server), attribute.String("pattern", pattern)))
}

// Denial counts a call to a tool hidden by policy or unknown.
func (t *Telemetry) Denial(ctx context.Context) { t.denials.Add(ctx, 1) }

// RateLimited counts a call refused by a rate limit.
func (t *Telemetry) RateLimited(ctx context.Context) { t.rateLimited.Add(ctx, 1) }

// AuditWriteFailure counts an audit record that could not be written.
func (t *Telemetry) AuditWriteFailure(ctx context.Context) { t.auditFailures.Add(ctx, 1) }

// PinViolation counts a tool definition that changed since it was pinned.
func (t *Telemetry) PinViolation(ctx context.Context) { t.pinViolations.Add(ctx, 1) }

// Reload counts a config reload by result ("ok", "unchanged", "failed",
// "superseded": replaced by a newer config while it waited for its starts).
func (t *Telemetry) Reload(ctx context.Context, result string) {
	t.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
}
