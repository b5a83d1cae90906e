#!/usr/bin/env bash
# helm.sh builds the helm CLI used by the chart checks (`helm lint` in
# .ci/run, and the chart tests in charts/test) and prints its path. It is a
# no-op when the binary already exists.
#
# helm is built from source through the Go module proxy (no prebuilt binary
# download), as a tool of the charts/test module (its go.mod's `tool`
# directive): the CLI is the helm the chart tests use as a library, at the
# version that go.mod pins, and the build reuses what vetting and testing
# charts/test compiled, all but the twenty packages only the command
# imports. It is built as `go test` builds charts/test (the same flags and
# cgo setting), for the same reason.
#
# Environment:
#   SWITCHBOARD_CACHE  cache root (default $HOME/.cache/switchboard)
set -euo pipefail
cd "$(dirname "$0")/../../charts/test"

export GOWORK=off
version="$(go list -m -f '{{.Version}}' helm.sh/helm/v3)"
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/helm-${version#v}"
bin="$dir/helm"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dir"
start=$SECONDS
# The version as helm's own Makefile stamps it.
go build -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" -o "$bin.tmp" helm.sh/helm/v3/cmd/helm >&2
mv "$bin.tmp" "$bin"
echo "built helm ${version#v} in $((SECONDS - start))s" >&2
echo "$bin"
