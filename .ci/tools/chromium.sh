#!/usr/bin/env bash
# chromium.sh installs Debian's chromium, the headless browser of e2e
# TestStatusPage, and prints the path of its binary. It is a no-op when
# chromium is already installed.
#
# Unlike haproxy.sh this installs the package on the system with apt-get:
# chromium pulls in some sixty libraries (GTK, NSS, fonts, ...) that an
# unpacked copy under the cache would have to find through a wrapper, and
# CI runs as root, where apt-get install works as it is. Progress goes to
# stderr; stdout is only the path.
#
# The version is whatever apt's candidate is: the test uses the DevTools
# protocol's stable domains only (Target, Page, Runtime, Network, Log).
set -euo pipefail

if bin="$(command -v chromium)"; then
	echo "$bin"
	exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
	echo "chromium.sh: chromium is not installed and installing it needs root (apt-get install chromium)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends chromium >&2; then
	echo "chromium.sh: apt-get install failed; refreshing the package lists once" >&2
	apt-get update >&2
	apt-get install -y --no-install-recommends chromium >&2
fi
bin="$(command -v chromium)"
"$bin" --version >&2
echo "$bin"
