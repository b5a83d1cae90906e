#!/usr/bin/env bash
# kube.sh builds the kube-apiserver and etcd binaries used by the chart tests
# (charts/test) and prints the directory that holds them. It is a no-op when
# both binaries already exist.
#
# Both are built from source through the Go module proxy (no prebuilt binary
# download):
#   - kube-apiserver from a throw-away wrapper module that requires
#     k8s.io/kubernetes at a fixed version and maps every staging module of
#     Kubernetes' own go.mod (replaced there by ./staging/src/k8s.io/…, which
#     only works inside the Kubernetes repository) to the published v0.X.Y
#     that matches the release;
#   - etcd from a wrapper module that requires go.etcd.io/etcd/server/v3 (its
#     module root is the etcd main package).
# A cold build takes several minutes on an idle machine (kube-apiserver is
# most of it) and can take much longer on a small, busy one; the Go build
# cache makes a rebuild quick.
#
# Environment:
#   SWITCHBOARD_CACHE  cache root (default $HOME/.cache/switchboard)
#   KUBE_VERSION       Kubernetes version to build (default 1.36.3)
#   ETCD_VERSION       etcd version to build (default 3.6.8)
set -euo pipefail

kube_version="${KUBE_VERSION:-1.36.3}"
etcd_version="${ETCD_VERSION:-3.6.8}"
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/kube-$kube_version-etcd-$etcd_version"
apiserver="$dir/kube-apiserver"
etcd="$dir/etcd"

if [[ -x "$apiserver" && -x "$etcd" ]]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Keep the wrapper modules independent of any enclosing workspace.
export GOWORK=off
export GOFLAGS=-mod=mod
export CGO_ENABLED=0

build_apiserver() {
	local w="$work/kube"
	mkdir -p "$w" && cd "$w"
	go mod init kubebuild >&2
	go mod download "k8s.io/kubernetes@v$kube_version" >&2
	local gomod
	gomod="$(go mod download -json "k8s.io/kubernetes@v$kube_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
	# Staging modules: every k8s.io/* module replaced by a ./staging path
	# that Kubernetes also requires (the sample-* modules are replaced but
	# never required, and are not published).
	local staging=() m
	while read -r m; do
		if grep -Eq "^[[:space:]]+$m v0\.0\.0" "$gomod"; then
			staging+=("$m")
		fi
	done < <(sed -n '/^replace (/,/^)/p' "$gomod" | awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}')
	if [[ ${#staging[@]} -eq 0 ]]; then
		echo "kube.sh: found no staging modules in $gomod" >&2
		exit 1
	fi
	local staging_version="v0.${kube_version#1.}"
	local edits=(-require="k8s.io/kubernetes@v$kube_version")
	for m in "${staging[@]}"; do
		edits+=(-replace="$m=$m@$staging_version")
	done
	go mod edit "${edits[@]}"
	cat > tools.go <<'GO'
//go:build tools

package kubebuild

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
	go get "k8s.io/kubernetes/cmd/kube-apiserver@v$kube_version" >&2
	# The version Kubernetes' own build stamps in (hack/lib/version.sh);
	# without it the server reports v0.0.0 and Helm's kubeVersion checks fail.
	local minor="${kube_version#1.}"
	minor="${minor%%.*}"
	# Without the symbol table and DWARF (-s -w) the link takes half as long.
	local ldflags="-s -w" pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=v$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	local start=$SECONDS
	go build -trimpath -ldflags "$ldflags" -o "$apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
	mv "$apiserver.tmp" "$apiserver"
	echo "built kube-apiserver $kube_version in $((SECONDS - start))s" >&2
}

build_etcd() {
	local w="$work/etcd"
	mkdir -p "$w" && cd "$w"
	go mod init etcdbuild >&2
	go mod edit -require="go.etcd.io/etcd/server/v3@v$etcd_version"
	cat > tools.go <<'GO'
//go:build tools

package etcdbuild

import _ "go.etcd.io/etcd/server/v3"
GO
	go get "go.etcd.io/etcd/server/v3@v$etcd_version" >&2
	local start=$SECONDS
	go build -trimpath -ldflags "-s -w" -o "$etcd.tmp" go.etcd.io/etcd/server/v3 >&2
	mv "$etcd.tmp" "$etcd"
	echo "built etcd $etcd_version in $((SECONDS - start))s" >&2
}

[[ -x "$etcd" ]] || build_etcd
[[ -x "$apiserver" ]] || build_apiserver
echo "$dir"
