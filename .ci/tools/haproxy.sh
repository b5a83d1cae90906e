#!/usr/bin/env bash
# haproxy.sh installs HAProxy, the L7 load balancer in front of the gateway
# replicas in e2e TestReplicasBehindL7Proxy, and prints the path of a
# wrapper that runs it. It is a no-op when the wrapper already exists.
#
# The Debian packages are fetched with `apt-get download` and unpacked with
# `dpkg-deb -x` under the cache: nothing is installed on the system, and no
# root is needed. The wrapper points LD_LIBRARY_PATH at the unpacked
# libraries the system lacks (Lua, opentracing); the rest (libc, OpenSSL,
# PCRE2, libsystemd) come from the system.
#
# The version is pinned: apt is asked for haproxy=<version> exactly, so when
# apt no longer offers it this fails loudly instead of caching another
# version under the pinned name (the e2e test looks for haproxy-<version>).
# Bump HAPROXY_VERSION here and in e2e/replicas_test.go together. The three
# libraries are whatever apt's candidate is: they only back the wrapper.
#
# Environment:
#   SWITCHBOARD_CACHE  cache root (default $HOME/.cache/switchboard)
#   HAPROXY_VERSION    Debian version of the haproxy package (default 2.6.12-1+deb12u3)
set -euo pipefail

version="${HAPROXY_VERSION:-2.6.12-1+deb12u3}"
cache="${SWITCHBOARD_CACHE:-$HOME/.cache/switchboard}"
dir="$cache/haproxy-$version"
bin="$dir/haproxy"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # apt-get download drops privileges to _apt for the fetch
cd "$work"
packages=("haproxy=$version" liblua5.3-0 libopentracing-c-wrapper0 libopentracing1)
if ! apt-get download "${packages[@]}" >&2; then
	echo "haproxy.sh: apt-get download failed; refreshing the package lists once" >&2
	apt-get update >&2
	if ! apt-get download "${packages[@]}" >&2; then
		echo "haproxy.sh: apt does not offer haproxy $version (see apt-cache policy haproxy); bump HAPROXY_VERSION here and in e2e/replicas_test.go" >&2
		exit 1
	fi
fi

got="$(dpkg-deb -f haproxy_*.deb Version)"
if [[ "$got" != "$version" ]]; then
	echo "haproxy.sh: downloaded haproxy $got, want $version" >&2
	exit 1
fi

# Unpack into a fresh directory beside the final one and rename it into
# place, so an interrupted run leaves no half-filled cache entry.
mkdir -p "$cache"
stage="$(mktemp -d "$cache/.haproxy-$version.XXXXXX")"
trap 'rm -rf "$work" "$stage"' EXIT
for deb in ./*.deb; do
	dpkg-deb -x "$deb" "$stage/root"
done
multiarch="$(uname -m)-linux-gnu"
cat > "$stage/haproxy" <<SH
#!/bin/sh
# Runs the HAProxy unpacked beside this script (.ci/tools/haproxy.sh).
here="\$(cd "\$(dirname "\$0")" && pwd)"
LD_LIBRARY_PATH="\$here/root/usr/lib/$multiarch\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "\$here/root/usr/sbin/haproxy" "\$@"
SH
chmod +x "$stage/haproxy"
"$stage/haproxy" -v >&2
rm -rf "$dir"
mv "$stage" "$dir"
echo "$bin"
