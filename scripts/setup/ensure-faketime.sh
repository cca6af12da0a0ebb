#!/usr/bin/env bash
# Idempotent: install Debian's faketime (libfaketime and its `faketime` wrapper), if missing. The testbed
# and the clock drift tests preload libfaketime into a node process to skew its clock; nothing in the
# product knows about it.
# Waits for another apt run to finish rather than failing on the dpkg lock.
set -euo pipefail
LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
if [ -e "$LIB" ]; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends faketime >/dev/null
[ -e "$LIB" ]
