// Package telemetry is switchboard's tracing and metrics: the OTel tracer
// (spans exported over OTLP only when the standard OTEL_* variables ask for
// it), and the instruments behind /metrics (also exported over OTLP when
// asked). It records what the pipeline tells it (RecordCall, Denial,
// Suspicious, …) and reads the rest, at each collection, from an
// Observation the proxy hands it; it knows nothing of the proxy's types.
//
// The exporters are exactly OTLP (HTTP/protobuf or gRPC) for traces and
// metrics, and Prometheus for metrics, chosen by OTEL_TRACES_EXPORTER,
// OTEL_METRICS_EXPORTER and OTEL_EXPORTER_OTLP_[<SIGNAL>_]PROTOCOL (see
// export.go); stdout and log exporters are not linked, to keep the binary
// small (#20).
package telemetry
