#!/usr/bin/env bash
# Idempotent: install Debian's Go, Rust (cargo) and Ruby (bundler) toolchains that the deployer's project-type
# tests build real projects with. Debian's packages, not ~/.cargo: builds run as an unprivileged user, who
# cannot reach a toolchain under /root. Nothing is fetched at build time (the test projects have no deps).
set -euo pipefail
need=()
[ -x /usr/bin/go ] || need+=(golang-go)
[ -x /usr/bin/cargo ] || need+=(cargo)
[ -x /usr/bin/rustc ] || need+=(rustc)
[ -x /usr/bin/ruby ] || need+=(ruby)
[ -x /usr/bin/bundle ] || need+=(ruby-bundler)
if [ "${#need[@]}" -eq 0 ]; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
for b in go cargo rustc ruby bundle; do [ -x "/usr/bin/$b" ]; done
