#!/usr/bin/env bash
# Idempotent: install Debian's syncthing (the file-sync plugin supervises it; its tests run 2-3 instances), if missing.
set -euo pipefail
if command -v syncthing >/dev/null 2>&1; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends syncthing >/dev/null
command -v syncthing >/dev/null
