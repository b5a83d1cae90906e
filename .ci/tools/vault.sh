#!/usr/bin/env bash
# vault.sh builds the Vault server binary used by the secrets/ Vault tests and
# prints its path. It is a no-op when the binary already exists.
#
# Vault is built from source through the Go module proxy (no prebuilt binary
# download), with a throw-away wrapper module that requires
# github.com/hashicorp/vault at a fixed version and repeats the non-local
# replace directives of Vault's own go.mod (replaces only apply in the main
# module). A cold build takes about ten minutes.
#
# Environment:
#   SWITCHBOARD_CACHE  cache root (default $HOME/.cache/switchboard)
#   VAULT_VERSION      Vault version to build (default 1.21.0)
set -euo pipefail

version="${VAULT_VERSION:-1.21.0}"
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/vault-$version"
bin="$dir/vault"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

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
cat > tools.go <<'GO'
//go:build tools

package vaultbuild

import _ "github.com/hashicorp/vault"
GO
go mod download github.com/hashicorp/vault >&2
# Resolve the full build list of Vault's main package.
go get "github.com/hashicorp/vault@v$version" >&2

start=$SECONDS
# Without the symbol table and DWARF (-s -w) the link takes half as long.
go build -trimpath -ldflags "-s -w" -o "$bin.tmp" github.com/hashicorp/vault >&2
mv "$bin.tmp" "$bin"
echo "built vault $version in $((SECONDS - start))s" >&2
echo "$bin"
