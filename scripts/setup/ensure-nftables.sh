#!/usr/bin/env bash
# Idempotent: install Debian's nftables (the `nft` tool the node's allowport tests run inside a network
# namespace they create; the machine's own rules are never touched), if missing.
set -euo pipefail
if command -v nft >/dev/null 2>&1; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends nftables >/dev/null
command -v nft >/dev/null
