#!/usr/bin/env bash
# Verifies hmssync.service with systemd-analyze (run by .ci/run). verify needs
# ExecStart's binary to exist, so a copy of the unit points at the built one;
# any warning fails, since verify itself exits 0 on unknown keys.
#   examples/systemd/verify.sh path/to/hmssync
set -euo pipefail
bin=$(realpath "${1:?usage: verify.sh HMSSYNC_BINARY}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s#/usr/local/bin/hmssync#$bin#g" "$(dirname "$0")/hmssync.service" >"$dir/hmssync.service"
out=$(systemd-analyze verify "$dir/hmssync.service" 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "systemd-analyze verify warned:"; echo "$out"; exit 1; fi
exposure=$(systemd-analyze security --offline=true "$dir/hmssync.service" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
# TimeoutStopSec must leave the sidecar its shutdown_timeout (the example's, 10s by default).
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s$/\1/p' "$dir/hmssync.service")
grace=$(sed -n 's/^shutdown_timeout: *\([0-9]*\)s.*/\1/p' "$(dirname "$0")/../sidecar.yaml")
grace=${grace:-10}
[ -n "$stop" ] && [ "$stop" -gt "$grace" ] || { echo "TimeoutStopSec=${stop}s must exceed shutdown_timeout ${grace}s"; exit 1; }
echo "hmssync.service: verified; systemd-analyze security exposure $exposure"
# Hardening that is dropped by accident shows here: 2.0 and below is "OK" in systemd's scale.
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 2.0) }' || { echo "exposure $exposure above 2.0: hardening was lost"; exit 1; }
