#!/usr/bin/env bash
# Idempotent: install Debian's faketime (libfaketime and its `faketime` wrapper), if missing. The testbed
# runs a node process under it to give that node a skewed clock; nothing in the product knows about it.
# Waits for another apt run to finish rather than failing on the dpkg lock.
set -euo pipefail
if command -v faketime >/dev/null 2>&1; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends faketime >/dev/null
command -v faketime >/dev/null
