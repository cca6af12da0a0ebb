#!/usr/bin/env bash
# `npm test`: install what the tests run against (idempotent), type-check, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup/ensure-litecoind.sh
bash scripts/setup/ensure-postgres.sh
bash scripts/setup/ensure-toolchains.sh
bash scripts/setup/ensure-docker.sh
npx --no-install tsc --noEmit -p .
# With no arguments every test runs; `npm test -- test/daemon` runs one area.
if [ "$#" -eq 0 ]; then set -- 'test/**/*.test.ts'; fi
exec npx --no-install mocha "$@"
