#!/usr/bin/env bash
# Run a command in its own network namespace (created if missing, loopback up), so that several developers
# on one machine can each run the apps tests: every dockerd needs the default bridge `docker0`, and there is
# one per network namespace. `nsenter --net=` rather than `ip netns exec`: the latter remounts /sys, which
# dockerd then fails on. Nothing reaches the machine's own network from inside.
# Usage: scripts/dev/in-netns.sh <name> <command> [args...]
set -euo pipefail
name="$1"; shift
[ -e "/run/netns/$name" ] || ip netns add "$name"
ip -n "$name" link set lo up
exec nsenter --net="/run/netns/$name" -- "$@"
