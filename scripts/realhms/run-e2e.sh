#!/usr/bin/env bash
# End-to-end suite: hmssync against a real Apache Hive Metastore (Hive 4.0.1, 3.1.3 and 2.3.10, each
# with the json-0.2 and, where the version has it (Hive 4), gzip(json-2.0) message encodings). Exits 0 only if every check that can run
# holds; prints one PASS/FAIL/SKIP line per check and a closing "N passed, N failed" line.
#
# Checks per Hive version and encoding:
#   hive        the workload's steps logged the events Hive is expected to log (the workload fails
#               otherwise) and every event carries the encoding's messageFormat
#   decode      `hmssync events decode` of the metastore's own events = the expected descriptors
#   tail        `hmssync events tail --decode` over Thrift from the real metastore = the expected
#               descriptors (the client and the decoder together)
# Per Hive version (json; sidecar-checks.sh, using `hmssync run`, `dev fe --hms`, `dev etcd`):
#   converge    three sidecars (one etcd, native dialect, a fake FE each loading from the metastore)
#               converge on the metastore's state, also after the master is killed
#   restart     the metastore is restarted while two sidecars are partway through a backlog (slowed
#               down by their fake FEs); they finish it after it is back, without a full refresh
#   wait        after the real client adds a partition, `hmssync wait` returns and the FE holds it:
#               member scope, cluster scope, and per table (--db --table: Hive 4 narrows the target
#               with its dbName filter; Hive 3.1 waits for the whole log)
#   cleanup     events cleaned by a short listener TTL cause exactly one full refresh (reason gap)
#               in each sidecar that was behind them (Hive 3.1.3's listener cleans every 60 s, a
#               constant, so this waits up to TTL + 60 s there)
# A check whose hmssync command is not built yet is SKIPPED (REALHMS_STRICT=1 makes that a failure,
# as CI does: every command exists, so such a skip means the detection is wrong). A check that does
# not apply to a Hive version (Hive 3.1 and 2.3 have no gzip encoder; Hive 2.3 runs no Kerberos
# checks, see KERBEROS_PROFILES) is SKIPPED as "not applicable" whatever REALHMS_STRICT says.
#
# Per Hive version, over Kerberos (kerberos-checks.sh: a real MIT KDC on loopback, the metastore with
# hive.metastore.sasl.enabled=true; needs krb5-kdc and krb5-admin-server, installed here):
#   kerberos converge   three sidecars with hms_auth converge, also after the master is killed
#   kerberos refusals   sidecars with another principal's keytab, a stale keytab and an unknown
#                       client principal stay up, not ready, naming what to fix
#   kerberos kdc down   a sidecar started while the KDC is stopped retries in place and, once the
#                       KDC is back, catches up without a full refresh
#   kerberos kdc down, backlog
#                       a backlog written while the sidecars hold (pause key) is drained with the
#                       KDC stopped; once it is back they converge, no full refresh
#   kerberos expiry     after the realm's short ticket lifetime has passed, the metastore restarts
#                       (now with hadoop.rpc.protection=integrity) and the sidecars reconnect with
#                       fresh tickets, negotiating QOP auth-int, and converge
#
# Environment: REALHMS_PROFILES (default "hive4 hive3 hive2"), REALHMS_FORMATS (default "json gzip"),
# REALHMS_KEEP=1 keeps the work directory, REALHMS_M2 sets Maven's local repository,
# REALHMS_KERBEROS_ONLY=1 runs only the Kerberos checks, REALHMS_KERBEROS_PROFILES (default all
# three) names the versions they run for.
#
# bench.sh (the real-metastore benchmark, not run by CI) sources this file for its functions.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/scripts/realhms"
PROFILES=${REALHMS_PROFILES:-"hive4 hive3 hive2"}
FORMATS=${REALHMS_FORMATS:-"json gzip"}
STRICT=${REALHMS_STRICT:-0}
# The Hive versions whose metastore the Kerberos checks run against.
KERBEROS_PROFILES=${REALHMS_KERBEROS_PROFILES-"hive4 hive3 hive2"}
declare -A KERBEROS_SKIP_WHY=()
WORK=$(mktemp -d "${TMPDIR:-/tmp}/realhms.XXXXXX")
PASSED=0
FAILED=0
SKIPPED=0
STARTED_PIDS=()

log() { printf '[realhms %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
pass() { PASSED=$((PASSED + 1)); log "PASS $*"; }
fail() { FAILED=$((FAILED + 1)); log "FAIL $*"; }
# skip: a check that cannot run because hmssync lacks what it needs (not built yet); under
# REALHMS_STRICT=1 that is a failure.
skip() {
	if [ "$STRICT" = 1 ]; then fail "$* (skipped, REALHMS_STRICT=1)"; else SKIPPED=$((SKIPPED + 1)); log "SKIP $*"; fi
}
# not_applicable: a check that has no meaning for this Hive version or setup; never a failure.
not_applicable() { SKIPPED=$((SKIPPED + 1)); log "SKIP (not applicable) $*"; }

cleanup() {
	local pid
	for pid in "${STARTED_PIDS[@]:-}"; do
		[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	done
	for pid in "${STARTED_PIDS[@]:-}"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null || true
	done
	if [ "${REALHMS_KEEP:-0}" = 1 ] || [ "$FAILED" -gt 0 ]; then
		log "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

# ---- tools ---------------------------------------------------------------------------------------

need_tools() {
	local missing=()
	command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
	command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
	command -v mvn >/dev/null 2>&1 || missing+=(maven)
	command -v curl >/dev/null 2>&1 || missing+=(curl)
	[ -x /usr/sbin/krb5kdc ] || missing+=(krb5-kdc)
	[ -x /usr/sbin/kadmin.local ] || missing+=(krb5-admin-server)
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
	fi
}

MVN_ARGS=(-B -q)
if [ -n "${REALHMS_M2:-}" ]; then MVN_ARGS+=("-Dmaven.repo.local=$REALHMS_M2"); fi

build_profile() { # profile -> sets CP
	local profile=$1 t0=$SECONDS
	(cd "$HERE" && mvn "${MVN_ARGS[@]}" -P "$profile" compile) >"$WORK/mvn-$profile.log" 2>&1 || {
		tail -40 "$WORK/mvn-$profile.log"
		return 1
	}
	CP="$HERE/target/$profile/classes:$(cat "$HERE/target/$profile/classpath.txt")"
	log "built $profile in $((SECONDS - t0))s"
}

# Extra JVM options of the Hive clients (java_main) and of the metastore (start_hms): the
# Kerberos checks set them to the realm's krb5.conf and each process's principal and keytab.
CLIENT_JAVA_OPTS=()
HMS_JAVA_OPTS=()

java_main() { # class args... (uses CP; logs of the Hive client go to $JLOG)
	java -Xmx512m -Drealhms.log="$JLOG" "${CLIENT_JAVA_OPTS[@]}" -cp "$CP" "hmssync.realhms.$@"
}

# ---- the metastore -------------------------------------------------------------------------------

ready_count() { local n; n=$(grep -c 'REALHMS READY' "$1/launcher.out" 2>/dev/null) || true; echo "${n:-0}"; }

# start_hms DIR FORMAT [launcher args] -> sets HMS_PID, HMS_URI
start_hms() {
	local dir=$1 format=$2
	shift 2
	mkdir -p "$dir"
	local before
	before=$(ready_count "$dir")
	java -Xmx768m -Drealhms.log="$dir/metastore.log" "${HMS_JAVA_OPTS[@]}" -cp "$CP" hmssync.realhms.Launcher \
		--dir "$dir/db" --format "$format" "$@" >>"$dir/launcher.out" 2>>"$dir/launcher.err" &
	HMS_PID=$!
	STARTED_PIDS+=("$HMS_PID")
	# The directory may be reused (restart): wait for one more READY line than before.
	local deadline=$((SECONDS + 240))
	while [ "$(ready_count "$dir")" -le "$before" ]; do
		if ! kill -0 "$HMS_PID" 2>/dev/null; then
			log "metastore exited before it was ready:"
			tail -n 20 "$dir/launcher.out" "$dir/launcher.err"
			return 1
		fi
		if [ $SECONDS -ge $deadline ]; then
			log "metastore not ready after 240s"
			return 1
		fi
		sleep 0.5
	done
	local ready
	ready=$(grep 'REALHMS READY' "$dir/launcher.out" | tail -1)
	HMS_URI=$(sed -n 's/.*uri=\([^ ]*\).*/\1/p' <<<"$ready")
	log "metastore up: $ready"
}

stop_hms() { # dir
	local dir=$1 i
	kill "$HMS_PID" 2>/dev/null || true
	for i in $(seq 1 60); do
		kill -0 "$HMS_PID" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$HMS_PID" 2>/dev/null; then
		log "metastore did not stop in 30s after SIGTERM; killing it"
		kill -9 "$HMS_PID" 2>/dev/null || true
		return 1
	fi
	wait "$HMS_PID" 2>/dev/null || true
	[ "$(grep -c 'REALHMS STOPPED' "$dir/launcher.out")" -ge 1 ]
}

# ---- hmssync -------------------------------------------------------------------------------------

build_hmssync() {
	local t0=$SECONDS
	(cd "$ROOT" && go build -o "$WORK/bin/hmssync" ./cmd/hmssync) || return 1
	HMSSYNC="$WORK/bin/hmssync"
	log "built hmssync in $((SECONDS - t0))s"
}

# has_command "events" "tail": the subcommand exists and is not a placeholder.
has_command() {
	local help
	help=$("$HMSSYNC" "$1" --help 2>&1 || true)
	grep -q "not built yet" <<<"$help" && return 1
	[ -z "${2:-}" ] && return 0
	grep -Eq "^ +$2([ ,]|$)" <<<"$help"
}

max_event_id() { # file -> the largest event_id in descriptor lines (0 if none)
	{ grep -o '"event_id":[0-9]*' "$1" || true; } | cut -d: -f2 | sort -n | tail -1 | sed 's/^$/0/'
}

# tail_until FILE URI FROM LAST: run `events tail --decode` until it printed event LAST (or 90 s).
tail_until() {
	local out=$1 uri=$2 from=$3 last=$4 pid deadline
	"$HMSSYNC" events tail --hms "$uri" --from "$from" --decode >"$out" 2>"$out.err" &
	pid=$!
	STARTED_PIDS+=("$pid")
	deadline=$((SECONDS + 90))
	while [ $SECONDS -lt $deadline ]; do
		if grep -q "\"event_id\":$last[,}]" "$out" 2>/dev/null; then break; fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	sleep 1 # anything printed after the last expected event is an extra line: let it arrive
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# ---- one Hive version x encoding -----------------------------------------------------------------

declare -A FORMAT_NAME=([json]="json-0.2" [gzip]="gzip(json-2.0)")

run_encoding() { # profile format
	local profile=$1 format=$2 dir="$WORK/$1-$2" label="$1/$2"
	mkdir -p "$dir"
	JLOG="$dir/client.log"
	if [ "$profile" != hive4 ] && [ "$format" = gzip ]; then
		not_applicable "$label: Hive ${profile#hive} has no message encoders (they came with Hive 4; json-0.2 only)"
		return
	fi
	start_hms "$dir" "$format" || { fail "$label hive: metastore did not start"; return; }
	local out from to
	if ! out=$(java_main Workload --uri "$HMS_URI" --prefix "e2e_$format" --expected "$dir/expected.jsonl" \
		--warehouse "file:$dir/db/warehouse" 2>&1 | tee "$dir/workload.out" | tail -1); then
		fail "$label hive: workload failed: $(grep -m1 -E 'Exception|step "' "$dir/workload.out" || tail -3 "$dir/workload.out")"
		stop_hms "$dir" || true
		return
	fi
	from=$(sed -n 's/.*from_event_id=\([0-9]*\).*/\1/p' <<<"$out")
	to=$(sed -n 's/.*to_event_id=\([0-9]*\).*/\1/p' <<<"$out")
	sed 's/^/    note: /' "$dir/expected.jsonl.notes"
	java_main EventDump --uri "$HMS_URI" --from "$from" >"$dir/events.jsonl"
	local n want=${FORMAT_NAME[$format]} nfmt
	n=$(wc -l <"$dir/events.jsonl")
	nfmt=$(grep -cF "\"messageFormat\":\"$want\"" "$dir/events.jsonl" || true)
	if [ "$n" -eq $((to - from)) ] && [ "$nfmt" -eq "$n" ]; then
		pass "$label hive: $n events ($from,$to], all $want, $(wc -l <"$dir/expected.jsonl") expected descriptors"
	else
		fail "$label hive: $n events for ($from,$to], $nfmt of them $want"
	fi

	if has_command events decode; then
		"$HMSSYNC" events decode <"$dir/events.jsonl" >"$dir/decoded.jsonl" 2>"$dir/decoded.err" || true
		if java_main Compare --expected "$dir/expected.jsonl" --actual "$dir/decoded.jsonl" \
			--label "$label decode" >"$dir/decode.cmp" 2>&1; then
			pass "$label decode: $(tail -1 "$dir/decode.cmp")"
		else
			fail "$label decode:"
			cat "$dir/decode.cmp"
		fi
	else
		skip "$label decode: hmssync events decode is not built yet"
	fi

	if has_command events tail; then
		tail_until "$dir/tail.out" "$HMS_URI" "$from" "$(max_event_id "$dir/expected.jsonl")"
		# With --decode, tail prints each event (eventId, ...) followed by its descriptor lines
		# (event_id, ...); the descriptors are what is compared.
		{ grep '"event_id"' "$dir/tail.out" || true; } >"$dir/tail.jsonl"
		if java_main Compare --expected "$dir/expected.jsonl" --actual "$dir/tail.jsonl" --from "$from" --to "$to" \
			--label "$label tail" >"$dir/tail.cmp" 2>&1; then
			pass "$label tail: $(tail -1 "$dir/tail.cmp")"
		else
			fail "$label tail:"
			cat "$dir/tail.cmp"
			sed 's/^/    stderr: /' "$dir/tail.out.err" | tail -5
		fi
	else
		skip "$label tail: hmssync events tail is not built yet"
	fi

	if stop_hms "$dir"; then
		pass "$label hive: metastore stopped cleanly"
	else
		fail "$label hive: metastore did not stop cleanly"
	fi
}

# ---- sidecar checks ------------------------------------------------------------------------------

sidecar_ready() {
	has_command run && has_command dev fe && "$HMSSYNC" dev fe --help >/dev/null 2>&1
}

run_sidecar_checks() { # profile
	local profile=$1 t0=$SECONDS
	if ! sidecar_ready; then
		skip "$profile/json converge: hmssync run / dev fe are not built yet"
		skip "$profile/json cleanup: hmssync run / dev fe are not built yet"
		skip "$profile/json restart: hmssync run / dev fe are not built yet"
		return
	fi
	# shellcheck source=sidecar-checks.sh
	. "$HERE/sidecar-checks.sh"
	sidecar_checks "$profile"
	log "$profile sidecar checks took $((SECONDS - t0))s"
}

run_kerberos_checks() { # profile
	local profile=$1 t0=$SECONDS
	# shellcheck source=sidecar-checks.sh
	. "$HERE/sidecar-checks.sh" # free_port, wait_port, start_bg, urls
	# shellcheck source=kdc.sh
	. "$HERE/kdc.sh"
	# shellcheck source=kerberos-checks.sh
	. "$HERE/kerberos-checks.sh"
	kerberos_checks "$profile"
	log "$profile kerberos checks took $((SECONDS - t0))s"
}

# ---- main ----------------------------------------------------------------------------------------

# bench.sh sources this file for its functions (tools, Maven, the metastore, hmssync) and runs a
# main of its own: when sourced, stop here.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

T0=$SECONDS
need_tools
build_hmssync || { fail "go build ./cmd/hmssync"; exit 1; }
for profile in $PROFILES; do
	if ! build_profile "$profile"; then
		fail "$profile: Maven build"
		continue
	fi
	if [ "${REALHMS_KERBEROS_ONLY:-0}" != 1 ]; then
		for format in $FORMATS; do
			run_encoding "$profile" "$format"
		done
	fi
	if [ "${REALHMS_KERBEROS_ONLY:-0}" != 1 ]; then run_sidecar_checks "$profile"; fi
	if [ "${REALHMS_KERBEROS_ONLY:-0}" != 1 ]; then . "$HERE/sidecar-checks.sh" && . "$HERE/txn-checks.sh" && txn_checks "$profile"; fi
	if [[ " $KERBEROS_PROFILES " == *" $profile "* ]]; then
		run_kerberos_checks "$profile"
	else
		not_applicable "$profile/kerberos: ${KERBEROS_SKIP_WHY[$profile]:-not in REALHMS_KERBEROS_PROFILES}"
	fi
done

log "finished in $((SECONDS - T0))s"
if [ "$SKIPPED" -gt 0 ]; then
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
else
	echo "$PASSED passed, $FAILED failed"
fi
[ "$FAILED" -eq 0 ]
