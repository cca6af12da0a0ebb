#!/usr/bin/env bash
# Idempotent: install Debian's chromium, if missing. The web interface's browser tests (test/ui/) and
# `npm run bench:ui` drive it through playwright-core, which never downloads a browser of its own.
# Waits for another apt run to finish rather than failing on the dpkg lock.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null
[ -x /usr/bin/chromium ]
