package telemetry

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// otelVars are the variables the exporter selection reads; each case
// starts with all of them empty.
var otelVars = []string{
	"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_METRICS_PRODUCERS",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
	"OTEL_EXPORTER_PROMETHEUS_HOST", "OTEL_EXPORTER_PROMETHEUS_PORT",
}

func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// TestExporterSelection pins the OTEL_* selection autoexport made before
// #20 replaced it: an endpoint alone turns OTLP on, "none" turns it off,
// http/protobuf is the default protocol, and a per-signal setting wins.
func TestExporterSelection(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		env                    map[string]string
		traces, metrics        string // exporter, or "error: <substring>"
		tracesGRPC, metricGRPC bool
	}{
		{name: "nothing set", traces: "none", metrics: "none"},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, traces: "otlp", metrics: "otlp"},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, traces: "otlp", metrics: "none"},
		{name: "metrics endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://collector:4318/v1/metrics"}, traces: "none", metrics: "otlp"},
		{name: "none wins over endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, traces: "none", metrics: "none"},
		{name: "otlp without endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp"}, traces: "otlp", metrics: "otlp"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, traces: "otlp", metrics: "otlp", tracesGRPC: true, metricGRPC: true},
		{name: "per-signal protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"}, traces: "otlp", metrics: "otlp", tracesGRPC: true},
		{name: "prometheus metrics", env: map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, traces: "none", metrics: "prometheus"},
		{name: "console traces", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, traces: `error: OTEL_TRACES_EXPORTER="console": unsupported`, metrics: "none"},
		{name: "console metrics", env: map[string]string{"OTEL_METRICS_EXPORTER": "console"}, traces: "none", metrics: `error: OTEL_METRICS_EXPORTER="console": unsupported`},
		{name: "prometheus traces", env: map[string]string{"OTEL_TRACES_EXPORTER": "prometheus"}, traces: `error: OTEL_TRACES_EXPORTER="prometheus": unsupported`, metrics: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, tc.env)
			for _, s := range []struct {
				signal, want string
				grpc         bool
			}{{"TRACES", tc.traces, tc.tracesGRPC}, {"METRICS", tc.metrics, tc.metricGRPC}} {
				got, err := exporterFor(s.signal)
				if wantErr, ok := strings.CutPrefix(s.want, "error: "); ok {
					if err == nil || !strings.Contains(err.Error(), wantErr) {
						t.Errorf("%s: exporter %q, error %v; want error %q", s.signal, got, err, wantErr)
					}
					continue
				}
				if err != nil || got != s.want {
					t.Errorf("%s: exporter %q, error %v; want %q", s.signal, got, err, s.want)
				}
				if got != exporterOTLP {
					continue
				}
				if g, err := otlpGRPC(s.signal); err != nil || g != s.grpc {
					t.Errorf("%s: gRPC %v, error %v; want %v", s.signal, g, err, s.grpc)
				}
			}
		})
	}
}

// TestNewExporters builds Telemetry with each kind of exporter; nothing is
// exported (the endpoints do not answer), so this checks the wiring and
// that Close returns.
func TestNewExporters(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         map[string]string
		wantTracing bool
		wantErr     string
	}{
		{name: "off"},
		{name: "otlp http", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, wantTracing: true},
		{name: "otlp grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantTracing: true},
		{name: "traces none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "prometheus listener", env: map[string]string{"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_PROMETHEUS_HOST": "127.0.0.1", "OTEL_EXPORTER_PROMETHEUS_PORT": "0"}},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, wantErr: `OTEL_* trace exporter: OTEL_TRACES_EXPORTER="console": unsupported`},
		{name: "http/json", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL="http/json": unsupported`},
		{name: "metrics producers", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_METRICS_PRODUCERS": "prometheus"}, wantErr: `OTEL_METRICS_PRODUCERS="prometheus": unsupported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, tc.env)
			tel, err := New(context.Background(), Options{Prometheus: true, Log: hclog.NewNullLogger()})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tel.Tracing != tc.wantTracing {
				t.Errorf("Tracing %v, want %v", tel.Tracing, tc.wantTracing)
			}
			// Over gRPC the final export retries until the deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			tel.Close(ctx)
		})
	}
}

// TestLinkedExporters: the binary links no exporter beyond the ones
// export.go builds (see #20). With -tags grpcnotrace it also links no
// text/template, whose reflective method calls would keep every exported
// method of every type in the binary.
func TestLinkedExporters(t *testing.T) {
	const cmd = "github.com/mcp-switchboard/switchboard/cmd/switchboard"
	// A name ending in "/" bans the package and those below it.
	for _, tc := range []struct {
		tags   string
		banned []string
	}{
		{"", []string{
			"go.opentelemetry.io/contrib/exporters/autoexport",
			"go.opentelemetry.io/otel/exporters/stdout/",
			"go.opentelemetry.io/otel/exporters/otlp/otlplog/",
			"go.opentelemetry.io/otel/sdk/log/",
		}},
		{"grpcnotrace", []string{"golang.org/x/net/trace/", "text/template", "html/template"}},
	} {
		out, err := exec.Command("go", "list", "-deps", "-tags="+tc.tags, cmd).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, b := range tc.banned {
				if pkg == strings.TrimSuffix(b, "/") || strings.HasSuffix(b, "/") && strings.HasPrefix(pkg, b) {
					t.Errorf("tags %q: %s links %s", tc.tags, cmd, pkg)
				}
			}
		}
	}
}
