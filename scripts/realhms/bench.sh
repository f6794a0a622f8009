#!/usr/bin/env bash
# Real-metastore benchmark: hmssync against a real Apache Hive Metastore (4.0.1 by default, with
# gzip(json-2.0) messages, Hive 4's default encoder, on embedded Derby). Long (a backlog of 20,000
# events takes minutes to write), so it is not part of CI; run it by hand:
#
#   scripts/realhms/bench.sh
#
# It builds hmssync and the Maven project (functions of run-e2e.sh), starts the metastore, writes a
# backlog of at least REALHMS_BENCH_EVENTS events through the real Hive client (Backlog.java:
# mostly ADD/ALTER/DROP_PARTITION over 32 tables in 4 databases, bench_d0 about 15% of them, plus
# CREATE_TABLE, ALTER_TABLE and INSERT), then runs `hmssync bench metastore` over it: per round,
# interleaved, the raw fetch, fetch+decode (sequential and with the next fetch in flight) and one
# `hmssync run` sidecar per binary and dialect draining the backlog from cursors seeded at its start
# (embedded etcd, fake FE). The report (min/median/max per figure, ratios to the raw fetch, each
# sidecar's CPU, peak RSS and step times) goes to stdout and to $WORK/report.md (and .json).
#
# Environment:
#   REALHMS_BENCH_EVENTS      backlog size (default 20000)
#   REALHMS_BENCH_PROFILE     hive4 (default) or hive3 (Hive 3.1.3; json only)
#   REALHMS_BENCH_FORMAT      gzip (default) or json (json-0.2)
#   REALHMS_BENCH_ROUNDS      rounds (default 3)
#   REALHMS_BENCH_BATCH_SIZE  events per fetch and the sidecars' batch_size (default 1000)
#   REALHMS_BENCH_DIALECTS    default doris,native
#   REALHMS_BENCH_THREADS     Hive client threads writing the backlog (default 8)
#   REALHMS_BENCH_BEFORE      an older hmssync binary: its `run` is measured as "before" beside this
#                             tree's as "after", in the same window
#   REALHMS_BENCH_AFTER       the binary measured as "after" (default: this tree's build)
#   REALHMS_BENCH_INCLUDE     the sidecars' catalogs[].include, comma-separated db.table regular
#                             expressions (e.g. 'bench_d0\..*': the one database of about 15%)
#   REALHMS_BENCH_DIR         keep the metastore (and its backlog) in this directory; a later run
#                             with the same directory reuses the backlog instead of writing it again
#   REALHMS_BENCH_DERBY_SYNC  1 makes Derby sync its log on every commit (default 0: the backlog is
#                             written without fsync, which only speeds up writing it; reads are
#                             the same)
#   REALHMS_KEEP=1 keeps the work directory; REALHMS_M2 sets Maven's local repository.
set -euo pipefail

HERE_BENCH=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=run-e2e.sh
. "$HERE_BENCH/run-e2e.sh"

EVENTS=${REALHMS_BENCH_EVENTS:-20000}
PROFILE=${REALHMS_BENCH_PROFILE:-hive4}
FORMAT=${REALHMS_BENCH_FORMAT:-gzip}
ROUNDS=${REALHMS_BENCH_ROUNDS:-3}
BATCH=${REALHMS_BENCH_BATCH_SIZE:-1000}
DIALECTS=${REALHMS_BENCH_DIALECTS:-doris,native}
THREADS=${REALHMS_BENCH_THREADS:-8}

need_bench_tools() {
	local missing=()
	command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
	command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
	command -v mvn >/dev/null 2>&1 || missing+=(maven)
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
	fi
}

bench_main() {
	if [ "$PROFILE" = hive3 ] && [ "$FORMAT" = gzip ]; then
		log "Hive 3.1 has no gzip encoder: set REALHMS_BENCH_FORMAT=json with REALHMS_BENCH_PROFILE=hive3"
		return 2
	fi
	need_bench_tools
	build_hmssync || { fail "go build ./cmd/hmssync"; return 1; }
	build_profile "$PROFILE" || { fail "$PROFILE: Maven build"; return 1; }
	local dir=${REALHMS_BENCH_DIR:-$WORK/$PROFILE-$FORMAT}
	mkdir -p "$dir"
	JLOG="$dir/client.log"
	if [ "${REALHMS_BENCH_DERBY_SYNC:-0}" != 1 ]; then HMS_JAVA_OPTS+=(-Dderby.system.durability=test); fi
	start_hms "$dir" "$FORMAT" || { fail "metastore did not start"; return 1; }

	local done_line from to
	done_line=$(grep -h 'BACKLOG DONE' "$dir/backlog.out" 2>/dev/null | tail -1 || true)
	if [ -n "$done_line" ]; then
		log "reusing the backlog in $dir: $done_line"
	else
		log "writing a backlog of $EVENTS events with $THREADS threads"
		if ! java_main Backlog --uri "$HMS_URI" --events "$EVENTS" --threads "$THREADS" \
			--warehouse "file:$dir/db/warehouse" 2>&1 | tee "$dir/backlog.log" | grep --line-buffered -E '^(backlog|BACKLOG)'; then
			fail "backlog: $(grep -m1 -E 'Exception|failed' "$dir/backlog.log" || tail -3 "$dir/backlog.log")"
			stop_hms "$dir" || true
			return 1
		fi
		grep '^BACKLOG' "$dir/backlog.log" >"$dir/backlog.out"
		done_line=$(grep 'BACKLOG DONE' "$dir/backlog.out" | tail -1)
	fi
	from=$(sed -n 's/.*from_event_id=\([0-9]*\).*/\1/p' <<<"$done_line")
	to=$(sed -n 's/.*to_event_id=\([0-9]*\).*/\1/p' <<<"$done_line")

	local args=(bench metastore --hms "$HMS_URI" --from "$from" --to "$to" --batch-size "$BATCH"
		--rounds "$ROUNDS" --dialects "$DIALECTS" --json-file "$WORK/report.json")
	if [ -n "${REALHMS_BENCH_BEFORE:-}" ]; then
		args+=(--sidecar "before=$REALHMS_BENCH_BEFORE" --sidecar "after=${REALHMS_BENCH_AFTER:-$HMSSYNC}")
	elif [ -n "${REALHMS_BENCH_AFTER:-}" ]; then
		args+=(--sidecar "after=$REALHMS_BENCH_AFTER")
	fi
	if [ -n "${REALHMS_BENCH_INCLUDE:-}" ]; then args+=(--include "$REALHMS_BENCH_INCLUDE"); fi
	log "measuring: hmssync ${args[*]}"
	if ! "$HMSSYNC" "${args[@]}" >"$WORK/report.md" 2> >(tee "$WORK/progress.log" >&2); then
		fail "hmssync bench metastore (progress in $WORK/progress.log)"
		stop_hms "$dir" || true
		return 1
	fi
	stop_hms "$dir" || log "the metastore did not stop cleanly (the figures stand)"
	echo
	sed 's/^/    /' "$dir/backlog.out"
	echo
	cat "$WORK/report.md"
	pass "bench: report in $WORK/report.md and $WORK/report.json"
	REALHMS_KEEP=1 # the report is the point: keep it
}

T0=$SECONDS
bench_main
log "finished in $((SECONDS - T0))s"
