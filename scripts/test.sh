#!/usr/bin/env bash
# `npm test`: install what the tests run against (idempotent), then type-check and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup/ensure-litecoind.sh
bash scripts/setup/ensure-postgres.sh
bash scripts/setup/ensure-toolchains.sh
bash scripts/setup/ensure-docker.sh
bash scripts/setup/ensure-nftables.sh
bash scripts/setup/ensure-miniupnpd.sh
bash scripts/setup/ensure-syncthing.sh
bash scripts/setup/ensure-faketime.sh
bash scripts/setup/ensure-chromium.sh
# Child processes in the tests run the shipped entry points from dist/: build it once here, not in each shard.
node scripts/build.mjs --if-stale
# With no arguments every test runs, in concurrent shards of areas, with the type check beside them
# (scripts/test-shards.mjs); `npm test -- 'test/daemon/**/*.test.ts'` type-checks, then runs one area in one
# mocha process.
if [ "$#" -eq 0 ]; then exec node scripts/test-shards.mjs; fi
npx --no-install tsc --noEmit -p .
exec npx --no-install mocha "$@"
