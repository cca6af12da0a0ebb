#!/usr/bin/env bash
# Idempotent: install Debian's miniupnpd with its nftables backend (the UPnP gateway the node plugin's UPnP
# tests run as the router of network namespaces they create; no service is started), if missing. Waits for
# another apt run to finish rather than failing on the dpkg lock.
set -euo pipefail
if command -v miniupnpd >/dev/null 2>&1 || [ -x /usr/sbin/miniupnpd ]; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends miniupnpd-nftables >/dev/null
[ -x /usr/sbin/miniupnpd ]
