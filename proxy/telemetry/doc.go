// Package telemetry is switchboard's tracing and metrics: the OTel tracer
// (spans exported over OTLP only when the standard OTEL_* variables ask for
// it), and the instruments behind /metrics (also exported over OTLP when
// asked). It records what the pipeline tells it (RecordCall, Denial,
// Suspicious, …) and reads the rest, at each collection, from an
// Observation the proxy hands it; it knows nothing of the proxy's types.
package telemetry
