#!/usr/bin/env bash
# vault.sh builds the Vault server used by the secrets/ and e2e Vault tests
# and prints its path. It is a no-op when the build already exists.
#
# Vault is built from source through the Go module proxy (no prebuilt binary
# download), with a throw-away wrapper module that requires
# github.com/hashicorp/vault at a fixed version and repeats the non-local
# replace directives of Vault's own go.mod (replaces only apply in the main
# module). It is Vault's minimal build (-tags minimal: the core with KV,
# AppRole, userpass, cert, JWT/OIDC, PKI, SSH and Transit; none of the cloud
# and database plugins, more than half of the full build's source), which
# the tests need all of but Kubernetes auth. That one is built beside it as
# the external plugin Vault ships it as (vault-plugin-auth-kubernetes, at the
# version Vault's go.mod requires), into plugins/, for `vault server -dev
# -dev-plugin-dir` and a catalog registration (secrets/vault_test.go).
#
# Environment:
#   SWITCHBOARD_CACHE  cache root (default $HOME/.cache/switchboard)
#   VAULT_VERSION      Vault version to build (default 1.21.0)
set -euo pipefail

version="${VAULT_VERSION:-1.21.0}"
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/vault-$version-minimal"
bin="$dir/vault"
kubeauth=github.com/hashicorp/vault-plugin-auth-kubernetes

if [[ -x "$bin" && -x "$dir/plugins/vault-plugin-auth-kubernetes" ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
work="$(mktemp -d)"
stage="$(mktemp -d "$cache/.vault-$version.XXXXXX")"
trap 'rm -rf "$work" "$stage"' EXIT
cd "$work"
# Keep the wrapper module independent of any enclosing workspace.
export GOWORK=off
export GOFLAGS=-mod=mod
# These two plugin modules have go.sum entries that the checksum database
# does not serve for the versions Vault pins.
export GONOSUMDB="github.com/hashicorp/vault-plugin-database-snowflake,github.com/hashicorp/vault-plugin-secrets-openldap${GONOSUMDB:+,$GONOSUMDB}"
go mod init vaultbuild >&2
go mod edit \
	-require="github.com/hashicorp/vault@v$version" \
	-replace=github.com/99designs/keyring=github.com/Jeffail/keyring@v1.2.3 \
	-replace=github.com/ma314smith/signedxml@v1.1.1=github.com/moov-io/signedxml@v1.1.1
go mod download github.com/hashicorp/vault >&2
# Resolve the build list of Vault's main package, then the plugin's command
# at the version that list holds.
go get "github.com/hashicorp/vault@v$version" >&2
kubeauth_version="$(go list -m -f '{{.Version}}' "$kubeauth")"
go get "$kubeauth/cmd/vault-plugin-auth-kubernetes@$kubeauth_version" >&2
start=$SECONDS
# One build for both, so they share their compiling; without the symbol
# table and DWARF (-s -w) the link takes half as long.
go build -trimpath -tags minimal -ldflags "-s -w" -o "$stage/" \
	github.com/hashicorp/vault "$kubeauth/cmd/vault-plugin-auth-kubernetes" >&2
mkdir "$stage/plugins"
mv "$stage/vault-plugin-auth-kubernetes" "$stage/plugins/"
"$stage/vault" version >&2
rm -rf "$dir"
mv "$stage" "$dir"
echo "built vault $version (minimal) and $kubeauth $kubeauth_version in $((SECONDS - start))s" >&2
echo "$bin"
