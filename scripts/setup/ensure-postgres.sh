#!/usr/bin/env bash
# Idempotent: install Debian's PostgreSQL server for the explorer tests (they start a throw-away cluster
# with initdb as the `postgres` user, on a free port), if missing. The node needs none unless configured
# with `explorer.store: { kind: postgres }`.
set -euo pipefail
have() { command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }
if have && id postgres >/dev/null 2>&1; then exit 0; fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Debian 12 ships 15 as postgresql-15; elsewhere the unversioned package names the distribution's one.
$SUDO apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null 2>&1 ||
  $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
have
