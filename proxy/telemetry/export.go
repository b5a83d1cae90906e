package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	promexp "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The exporters are built here from the standard OTEL_* variables rather
// than by go.opentelemetry.io/contrib/exporters/autoexport, which also links
// the stdout and log exporters (and their SDKs) that switchboard never uses.
// The selection below is autoexport's, minus "console": OTEL_<SIGNAL>_EXPORTER
// names one exporter, OTEL_EXPORTER_OTLP_[<SIGNAL>_]PROTOCOL picks OTLP's
// transport (http/protobuf by default), and the OTLP exporters read the rest
// (endpoint, headers, TLS, compression, timeout) themselves. Both OTLP
// transports stay: the HTTP exporters import google.golang.org/grpc as well
// (through go.opentelemetry.io/proto/otlp's collector packages, see
// open-telemetry/opentelemetry-go#2579), so leaving the gRPC ones out would
// save only their own code, about 0.65 MB. See #20.

// Exporter names of OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER.
const (
	exporterOTLP       = "otlp"
	exporterNone       = "none"
	exporterPrometheus = "prometheus" // metrics only
)

// exporterFor returns the exporter OTEL_<signal>_EXPORTER names for signal
// ("TRACES" or "METRICS"). Unset, it is otlp when an OTLP endpoint is set
// and none otherwise.
func exporterFor(signal string) (string, error) {
	key := "OTEL_" + signal + "_EXPORTER"
	v := os.Getenv(key)
	switch {
	case v == "":
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "" {
			return exporterOTLP, nil
		}
		return exporterNone, nil
	case v == exporterOTLP, v == exporterNone, v == exporterPrometheus && signal == "METRICS":
		return v, nil
	case signal == "METRICS":
		return "", fmt.Errorf("%s=%q: unsupported (want otlp, prometheus or none)", key, v)
	}
	return "", fmt.Errorf("%s=%q: unsupported (want otlp or none)", key, v)
}

// otlpGRPC reports whether OTLP for signal goes over gRPC rather than
// HTTP/protobuf, from OTEL_EXPORTER_OTLP_<signal>_PROTOCOL or else
// OTEL_EXPORTER_OTLP_PROTOCOL.
func otlpGRPC(signal string) (bool, error) {
	key := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	v := os.Getenv(key)
	if v == "" {
		key = "OTEL_EXPORTER_OTLP_PROTOCOL"
		v = os.Getenv(key)
	}
	switch v {
	case "", "http/protobuf":
		return false, nil
	case "grpc":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: unsupported (want http/protobuf or grpc)", key, v)
}

// newSpanExporter returns the OTLP span exporter, or nil when
// OTEL_TRACES_EXPORTER (or its absence) turns traces off.
func newSpanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	name, err := exporterFor("TRACES")
	if err != nil || name == exporterNone {
		return nil, err
	}
	grpc, err := otlpGRPC("TRACES")
	if err != nil {
		return nil, err
	}
	if grpc {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

// newMetricReader returns the reader OTEL_METRICS_EXPORTER asks for, or nil
// when it (or its absence) turns OTLP metrics off. The /metrics endpoint
// does not depend on it.
func newMetricReader(ctx context.Context) (sdkmetric.Reader, error) {
	name, err := exporterFor("METRICS")
	if err != nil || name == exporterNone {
		return nil, err
	}
	if name == exporterPrometheus {
		return newPrometheusServer(ctx)
	}
	// autoexport also took OTEL_METRICS_PRODUCERS=prometheus (a bridge from
	// the global Prometheus registry), which switchboard does not link; say
	// so rather than export less than asked.
	if v := os.Getenv("OTEL_METRICS_PRODUCERS"); v != "" && v != exporterNone {
		return nil, fmt.Errorf("OTEL_METRICS_PRODUCERS=%q: unsupported (want none or unset)", v)
	}
	grpc, err := otlpGRPC("METRICS")
	if err != nil {
		return nil, err
	}
	var exp sdkmetric.Exporter
	if grpc {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, err
	}
	// The interval and timeout come from OTEL_METRIC_EXPORT_INTERVAL and
	// OTEL_METRIC_EXPORT_TIMEOUT (the SDK reads them).
	return sdkmetric.NewPeriodicReader(exp), nil
}

// prometheusServer is the reader of OTEL_METRICS_EXPORTER=prometheus: the
// metrics on their own listener, OTEL_EXPORTER_PROMETHEUS_HOST:PORT
// (localhost:9464 by default), apart from the admin listener's /metrics.
type prometheusServer struct {
	sdkmetric.Reader
	srv  *http.Server
	done chan struct{} // closed when Serve has returned
}

func newPrometheusServer(ctx context.Context) (sdkmetric.Reader, error) {
	reg := promclient.NewRegistry()
	r, err := promexp.New(promexp.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	host, port := os.Getenv("OTEL_EXPORTER_PROMETHEUS_HOST"), os.Getenv("OTEL_EXPORTER_PROMETHEUS_PORT")
	if host == "" {
		host = "localhost"
	}
	if port == "" {
		port = "9464"
	}
	addr := net.JoinHostPort(host, port)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("prometheus exporter: listen %s: %w", addr, err), r.Shutdown(ctx))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	p := prometheusServer{Reader: r, srv: srv, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = srv.Serve(ln) // ends when Shutdown closes the listener
	}()
	return p, nil
}

// Shutdown stops the reader and the listener and waits for Serve to
// return.
func (p prometheusServer) Shutdown(ctx context.Context) error {
	err := errors.Join(p.Reader.Shutdown(ctx), p.srv.Shutdown(ctx))
	<-p.done
	return err
}
