#!/usr/bin/env bash
# Idempotent: install what the apps tests run against, if missing: Debian's docker.io (dockerd, containerd,
# runc; the tests start their own dockerd), docker-registry (a local registry the installs pull from),
# busybox-static (the root filesystem of the test images) and e2fsprogs (mkfs.ext4 for app volumes).
set -euo pipefail
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] || need+=(docker-registry)
[ -x /bin/busybox ] || need+=(busybox-static)
command -v mkfs.ext4 >/dev/null 2>&1 || need+=(e2fsprogs)
if [ "${#need[@]}" -eq 0 ]; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends: no system service set-up beyond the packages; the tests start dockerd themselves.
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian starts the packaged services where systemd runs; the tests use their own daemons only.
command -v dockerd >/dev/null && command -v docker-registry >/dev/null && [ -x /bin/busybox ]
