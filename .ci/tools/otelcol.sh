#!/usr/bin/env bash
# otelcol.sh builds a minimal OpenTelemetry Collector (OTLP receiver, debug
# and OTLP/HTTP exporters) with the collector builder, for the e2e tracing
# tests, and prints its path. It is a no-op when the binary already exists.
# Everything comes from the Go module proxy; a cold build takes about five
# minutes.
#
# Environment:
#   SWITCHBOARD_CACHE  cache root (default $HOME/.cache/switchboard)
#   OTELCOL_VERSION    collector version (default 0.162.0)
set -euo pipefail

version="${OTELCOL_VERSION:-0.162.0}"
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/otelcol-$version"
bin="$dir/otelcol-switchboard"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOWORK=off

GOBIN="$work/bin" go install "go.opentelemetry.io/collector/cmd/builder@v$version" >&2
cat > "$work/manifest.yaml" <<YAML
dist:
  name: otelcol-switchboard
  description: Collector for switchboard's end-to-end tests
  output_path: $work/dist
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$version
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v$version
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter v$version
YAML
start=$SECONDS
"$work/bin/builder" --config "$work/manifest.yaml" >&2
mv "$work/dist/otelcol-switchboard" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "built otelcol $version in $((SECONDS - start))s" >&2
echo "$bin"
