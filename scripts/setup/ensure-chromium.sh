#!/usr/bin/env bash
# Idempotent: install Debian's chromium, if missing. The browser tests drive it with playwright-core
# (never a downloaded browser: they point playwright at /usr/bin/chromium).
# Waits for another apt run to finish rather than failing on the dpkg lock.
set -euo pipefail
BIN=/usr/bin/chromium
if [ -x "$BIN" ]; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null
[ -x "$BIN" ]
