#!/usr/bin/env bash
# helm.sh builds the helm CLI used by the chart checks (`helm lint` in
# .ci/run, and the chart tests in charts/test) and prints its path. It is a
# no-op when the binary already exists.
#
# helm is built from source through the Go module proxy (no prebuilt binary
# download) with `go install`, which works because helm's go.mod has no
# replace directives. A cold build takes a few minutes on an idle machine.
#
# Environment:
#   SWITCHBOARD_CACHE  cache root (default $HOME/.cache/switchboard)
#   HELM_VERSION       helm version to build (default 3.22.0)
set -euo pipefail

version="${HELM_VERSION:-3.22.0}"
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/helm-$version"
bin="$dir/helm"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dir"
# Build outside any module or workspace, so only helm's own go.mod counts.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOWORK=off
start=$SECONDS
# Without the symbol table and DWARF (-s -w) the link takes half as long.
CGO_ENABLED=0 GOBIN="$dir" go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@v$version" >&2
echo "built helm $version in $((SECONDS - start))s" >&2
echo "$bin"
