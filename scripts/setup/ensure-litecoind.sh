#!/usr/bin/env bash
# Idempotent: install Debian's litecoind (a real bitcoin-family JSON-RPC daemon) for the tests, if missing.
set -euo pipefail
if command -v litecoind >/dev/null 2>&1; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends litecoind >/dev/null
command -v litecoind >/dev/null
