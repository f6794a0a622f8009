# shellcheck shell=bash
# Sourced by run-e2e.sh (uses its log/pass/fail/skip/not_applicable, start_hms/stop_hms, java_main,
# HMSSYNC, CP, WORK, STARTED_PIDS). The sidecar checks against one real Hive metastore
# (`sidecar_checks PROFILE`, the Maven profile run-e2e.sh built and put on CP; json encoding), with
# three `hmssync run` sidecars (native dialect, one fake FE each, `hmssync dev etcd`):
#   converge  the three sidecars converge on the metastore's state (every FE's cache = what the Hive
#             client lists: databases, tables, partition names); the master is killed (SIGKILL)
#             and the other two converge on the changes made after that
#   restart   the metastore is stopped and started again on the same database and port while two
#             sidecars are partway through a backlog (a workload made while their fake FEs refused
#             batches; drained RST_BATCH events per batch, each answered after RST_DELAY): it stops
#             once both cursors are inside the backlog, starts again once a sidecar's /status shows
#             a failed metastore read and the cursors are still inside it; the sidecars must then
#             finish the backlog (cursors up to its last event) and converge with no full refresh
#             (the sum of hmssync_full_refreshes_total over both does not move)
#   check     `hmssync check` with the sidecars' configuration passes (after converge's workload),
#             reporting the metastore's event settings (get_config_value) as the launcher set them;
#             against a second metastore started with them wrong (no listener, DML events off, a
#             600 s TTL, hive.metastore.alter.notifications.basic=true) it exits 1 with a ✗ and a
#             fix for each
#   pushdown  a fourth sidecar (its own cluster and fake FE) whose catalog includes one database
#             (pd_a) asks the metastore for that database's events by name (push-down) and
#             converges on it through a workload that renames a table out of it into pd_b (Hive
#             logs that ALTER_TABLE under pd_b); on Hive 4 the metastore must apply the filter (no
#             "ignores ... dbName filter" warning); on Hive 3.1 and 2.3 (whose request may not know
#             dbName) either outcome passes and the PASS line says which was seen
#   wait      read your writes: after the real Hive client adds a partition (AddPartition, to
#             wt_a.orders), `hmssync wait` returns 0 and at that moment the FE holds it (its cache of
#             wt_a.orders = the metastore's): member scope on one sidecar (its FE), cluster scope
#             (every FE), and per table (`--db wt_a --table orders`). On Hive 4 the per-table target
#             is narrowed by the metastore's dbName filter: with sidecar 3's FE refusing batches
#             after wt_a.orders' last event and a partition added to wt_b, the whole catalog times
#             out (exit 2) and the per-table wait returns with a target at that event; Hive 3.1
#             and 2.3 wait for the whole log, and the PASS line says so
#   cleanup   with every sidecar stopped, the metastore is restarted with the listener's short
#             TTL, changes are made and the TTL cleans them (it empties the log, as on an idle
#             metastore); the two sidecars started again (both behind the cleaned range) each
#             do exactly one full refresh, with reason "gap", and converge
# Everything started here (metastore, etcd, fake FEs, sidecars) is stopped before it returns, so
# the next profile's checks run alone.
#
# What this needs from hmssync (checked by sidecar_missing; the checks are skipped until then):
#   hmssync dev etcd --listen HOST:PORT --dir DIR      a single-node etcd until SIGTERM
#   hmssync dev fe --listen HOST:PORT --hms URI        a fake FE whose caches load from the
#                                                      metastore; GET /_fetest/state shows them
#   hmssync run --config F --member M --etcd-endpoints URL --fe-url URL --fe-dialect native
#               --http-listen HOST:PORT                /master 200 on the master only; /metrics has
#                                                      hmssync_full_refreshes_total{reason=...};
#                                                      /status has each catalog's cursor, failing
#                                                      and last_error
#   the fake FE's POST/DELETE /_fetest/faults (a delay, an HTTP status) on native batch requests
#   hmssync wait --url URL | --config F --catalog C [--db D --table T] [--scope cluster] --timeout S
#                                                      (the wait check; skipped until it exists)

sidecar_missing() {
	local h
	h=$("$HMSSYNC" dev etcd --help 2>&1 || true)
	grep -q -- "--listen" <<<"$h" || { echo "hmssync dev etcd --listen"; return; }
	h=$("$HMSSYNC" dev fe --help 2>&1 || true)
	grep -q -- "--listen" <<<"$h" && grep -q -- "--hms" <<<"$h" || { echo "hmssync dev fe --listen/--hms"; return; }
	h=$("$HMSSYNC" run --help 2>&1 || true)
	local f
	for f in --config --member --etcd-endpoints --fe-url --fe-dialect --http-listen; do
		grep -q -- "$f" <<<"$h" || { echo "hmssync run $f"; return; }
	done
}

free_port() { java_main Launcher --print-free-port true 2>/dev/null || echo $((20000 + RANDOM % 20000)); }

wait_port() { # host:port seconds
	local hp=$1 deadline=$((SECONDS + $2))
	while [ $SECONDS -lt "$deadline" ]; do
		(exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}") 2>/dev/null && return 0
		sleep 0.3
	done
	return 1
}

start_bg() { # logfile cmd... -> LAST_PID (appends: a restarted sidecar keeps its earlier log)
	local logf=$1
	shift
	"$@" >>"$logf" 2>&1 &
	LAST_PID=$!
	STARTED_PIDS+=("$LAST_PID")
}

start_sidecar() { # i
	local i=$1
	start_bg "$SC/sidecar$i.log" "$HMSSYNC" run --config "$SC/sidecar.yaml" --member "m$i" \
		--etcd-endpoints "http://$ETCD_ADDR" --fe-url "http://${FE_ADDR[$i]}" --fe-dialect native \
		--http-listen "${SC_ADDR[$i]}"
	SC_PID[$i]=$LAST_PID
	wait_port "${SC_ADDR[$i]}" 60
}

urls() { # array entries -> comma-separated http URLs
	local out="" a
	for a in "$@"; do out="$out,http://$a"; done
	echo "${out#,}"
}

# The listener's retention per profile, for the cleanup check, which restarts the metastore with it.
# The converge and restart checks run with the launcher's default TTL (a day): the restart check
# leaves unread events in the log across a metastore restart, which takes longer than a short TTL,
# so with it those events would be cleaned and the sidecars would rightly full-refresh. Hive 4 (our
# listener) cleans every --clean-interval-seconds. Hive 3.1.3's DbNotificationListener has no
# interval setting (MetastoreConf has only EVENT_DB_LISTENER_TTL): its CleanerThread cleans at
# start and then every 60 s (a constant, sleepTime), so the launcher is given no interval there and
# reports the fixed one, which sizes the cleanup wait below.
declare -A SIDECAR_HMS_ARGS=(
	[hive4]="--ttl-seconds 15 --clean-interval-seconds 2"
	[hive3]="--ttl-seconds 15"
	[hive2]="--ttl-seconds 15"
)

# Workload options per profile, and what that leaves untested (reported as a SKIP line, not
# applicable to that Hive version, so REALHMS_STRICT does not fail it). Hive
# 3.1.3's alter_database keeps a database's name but logs an ALTER_DATABASE whose after-object has
# the requested name; hmssync decodes that, as reference §5 says, as RENAME_DATABASE, and the native
# protocol tells an FE to check a database rename with the metastore (docs/fe-protocol.md), which the
# fake FE (dev fe --hms) does, so the false rename leaves its cache right. Both profiles run it.
declare -A SIDECAR_WORKLOAD_ARGS=(
	[hive4]=""
	[hive3]=""
	[hive2]=""
)
declare -A SIDECAR_WORKLOAD_SKIP=()

# The restart check's pace: the sidecars read RST_BATCH events per batch (catalogs[].batch_size, for
# every check: the others only gain from draining in many batches), and the fake FEs answer each
# batch after RST_DELAY while the backlog is drained, so one workload's backlog (some 30 events)
# lasts about half a minute: ample for the evidence that the sidecars are partway through it
# and for stopping the metastore, never needed in full (the metastore stops after a few batches and
# the FEs answer at once after it is back).
RST_BATCH=2
RST_DELAY=2s

# preflight_check LABEL: `hmssync check` with the sidecars' configuration passes against the real
# metastore (which now holds the converge workload's events), etcd and fake FE 1, including the
# notification log and the decoding of its newest window.
preflight_check() {
	local L=$1 profile=$2
	# has_command (run-e2e.sh) reads the help captured: piped into grep -q it could die of
	# SIGPIPE under pipefail, which read as "not built yet".
	if ! has_command check --config; then
		skip "$L check: hmssync check is not built yet"
		return
	fi
	if ! HMSSYNC_ETCD_ENDPOINTS="http://$ETCD_ADDR" HMSSYNC_FE_URL="http://${FE_ADDR[1]}" HMSSYNC_FE_DIALECT=native \
		HMSSYNC_MEMBER=preflight "$HMSSYNC" check --config "$SC/sidecar.yaml" >"$SC/check.out" 2>&1; then
		fail "$L check: hmssync check failed against the real metastore: $(grep '✗' "$SC/check.out" | head -3)"
		return
	fi
	grep -q "✓ catalog hive: notification log readable: events" "$SC/check.out" ||
		{ fail "$L check: no notification log check in: $(cat "$SC/check.out")"; return; }
	# The metastore's event settings as get_config_value reveals them: those the launcher sets
	# right pass. The listener is Hive's DbNotificationListener (✓) except on Hive 4, whose
	# listener here is the suite's own (NotificationLogListener): hmssync cannot tell that it
	# writes the log, and says so (?).
	local s want_listener="✓" missing=()
	[ "$profile" = hive4 ] && want_listener="?"
	for s in "$want_listener catalog hive: setting hive.metastore.(transactional.)event.listeners" \
		"✓ catalog hive: setting hive.metastore.dml.events: true" \
		"✓ catalog hive: setting hive.metastore.event.db.listener.timetolive: 86400 s" \
		"✓ catalog hive: setting hive.metastore.notifications.add.thrift.objects" \
		"✓ catalog hive: setting hive.metastore.alter.notifications.basic: not a setting of this metastore" \
		"✓ catalog hive: setting hive.metastore.event.db.notification.api.auth: false" \
		"✓ catalog hive: setting hive.txn.timeout: 300 s"; do
		grep -qF -- "$s" "$SC/check.out" || missing+=("$s")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		fail "$L check: the event settings are not reported as expected: missing \"${missing[0]}\" in: $(grep 'setting ' "$SC/check.out")"
		return
	fi
	pass "$L check: hmssync check passes against the real metastore ($(grep -c '✓' "$SC/check.out") checks; event settings: $(grep -c '✓ catalog hive: setting ' "$SC/check.out") ✓, $(grep -c '? catalog hive: setting ' "$SC/check.out") ?)"
	settings_wrong_check "$L"
}

# settings_wrong_check LABEL: `hmssync check` against a second metastore started with the event
# settings wrong (no listener, DML events off, a 10-minute TTL, CDH's basic-alter flag on) fails,
# with a ✗ and its fix for each of them. Uses etcd and fake FE 1; the metastore is stopped after.
settings_wrong_check() {
	local L=$1 keep_pid=$HMS_PID keep_uri=$HMS_URI bad_uri s missing=()
	start_hms "$SC/hms-bad" json --ttl-seconds 600 \
		--settings "hive.metastore.transactional.event.listeners=;hive.metastore.dml.events=false;hive.metastore.alter.notifications.basic=true" ||
		{ HMS_PID=$keep_pid HMS_URI=$keep_uri; fail "$L check (wrong settings): the metastore did not start"; return; }
	bad_uri=$HMS_URI
	sed "s|hms_uris: \[.*\]|hms_uris: [$bad_uri]|" "$SC/sidecar.yaml" >"$SC/sidecar-bad.yaml"
	if HMSSYNC_ETCD_ENDPOINTS="http://$ETCD_ADDR" HMSSYNC_FE_URL="http://${FE_ADDR[1]}" HMSSYNC_FE_DIALECT=native \
		HMSSYNC_MEMBER=preflight "$HMSSYNC" check --config "$SC/sidecar-bad.yaml" >"$SC/check-bad.out" 2>&1; then
		missing+=("exit status 1")
	fi
	for s in "✗ catalog hive: setting hive.metastore.(transactional.)event.listeners: no listener writes the notification log" \
		"✗ catalog hive: setting hive.metastore.dml.events: \"false\"" \
		"✗ catalog hive: setting hive.metastore.event.db.listener.timetolive: 600 s" \
		"✗ catalog hive: setting hive.metastore.alter.notifications.basic: \"true\"" \
		"✓ catalog hive: setting hive.metastore.event.db.notification.api.auth: false"; do
		grep -qF -- "$s" "$SC/check-bad.out" || missing+=("$s")
	done
	[ "$(grep -c '^    fix: set hive.metastore' "$SC/check-bad.out")" -ge 4 ] || missing+=("a fix under each ✗ setting")
	stop_hms "$SC/hms-bad" || true
	HMS_PID=$keep_pid HMS_URI=$keep_uri
	if [ ${#missing[@]} -gt 0 ]; then
		fail "$L check (wrong settings): missing \"${missing[0]}\" in: $(grep -E 'setting |checks' "$SC/check-bad.out")"
		return
	fi
	pass "$L check (wrong settings): against a metastore without listener, DML events off, a 600 s TTL and basic alters, hmssync check exits 1 with a ✗ and a fix for each"
}

# pushdown_check LABEL PROFILE: see the file comment. Uses the running metastore and etcd; starts
# and stops its own fake FE and sidecar.
pushdown_check() {
	local L=$1 profile=$2 fe sc pid_fe pid_sc
	fe="127.0.0.1:$(free_port)"
	sc="127.0.0.1:$(free_port)"
	sed -e 's/^cluster: realhms-e2e$/cluster: realhms-pd/' \
		-e 's/^    batch_size: .*/    batch_size: 5\n    include: ['"'"'pd_a\\..*'"'"']/' "$SC/sidecar.yaml" >"$SC/sidecar-pd.yaml"
	grep -q "include: \['pd_a" "$SC/sidecar-pd.yaml" || { fail "$L pushdown: could not write the configuration"; return; }
	start_bg "$SC/fe-pd.log" "$HMSSYNC" dev fe --listen "$fe" --hms "$HMS_URI"
	pid_fe=$LAST_PID
	wait_port "$fe" 60 || { fail "$L pushdown: fake FE did not start"; return; }
	start_bg "$SC/sidecar-pd.log" "$HMSSYNC" run --config "$SC/sidecar-pd.yaml" --member pd \
		--etcd-endpoints "http://$ETCD_ADDR" --fe-url "http://$fe" --fe-dialect native --http-listen "$sc"
	pid_sc=$LAST_PID
	if wait_port "$sc" 60 &&
		java_main Workload --uri "$HMS_URI" --prefix pd --expected "$SC/pd.jsonl" --warehouse "file:$SC/hms/db/warehouse" >"$SC/pd.out" 2>&1 &&
		java_main SidecarProbe converge --hms "$HMS_URI" --fe "http://$fe" --database pd_a --timeout 120 >"$SC/pd.cmp"; then
		if ! grep -q 'events of the included databases only.*pd_a' "$SC/sidecar-pd.log"; then
			fail "$L pushdown: the sidecar did not push the include down: $(grep -m2 -i 'include\|databases' "$SC/sidecar-pd.log")"
		elif [ "$profile" = hive4 ] && grep -q 'ignores get_next_notification' "$SC/sidecar-pd.log"; then
			fail "$L pushdown: the sidecar found Hive 4 ignoring the dbName filter: $(grep -m1 'ignores get_next_notification' "$SC/sidecar-pd.log")"
		else
			local how="the metastore filtered"
			grep -q 'ignores get_next_notification' "$SC/sidecar-pd.log" && how="the metastore ignored the filter; the sidecar noticed and read the whole log"
			pass "$L pushdown: a sidecar including pd_a only converged on it, pd_a.plain_renamed -> pd_b.moved included ($how)"
		fi
	else
		fail "$L pushdown: no convergence on pd_a: $(tail -5 "$SC/pd.cmp" 2>/dev/null; grep -m1 -E 'Exception|step "' "$SC/pd.out" 2>/dev/null)"
	fi
	kill "$pid_sc" "$pid_fe" 2>/dev/null || true
	wait "$pid_sc" "$pid_fe" 2>/dev/null || true
}

# wait_write LABEL DB VALUE: the real client adds partition (VALUE, eu) to DB.orders (creating them
# first if needed); WAIT_ID is the metastore's current event id after it.
wait_write() {
	local L=$1 db=$2 v=$3
	WAIT_ID=$(java_main AddPartition --uri "$HMS_URI" --db "$db" --table orders --values "$v,eu" \
		--warehouse "file:$SC/hms/db/warehouse" 2>>"$SC/wait.err" | sed -n 's/^ADDED event_id=\([0-9]*\)$/\1/p')
	[ -n "$WAIT_ID" ] || { fail "$L wait: the Hive client could not add partition ($v, eu) to $db.orders: $(tail -3 "$SC/wait.err")"; return 1; }
}

# wait_holds LABEL WHAT OUT FE...: every FE's cache of wt_a.orders equals the metastore's, looked at
# once, right after `hmssync wait` printed OUT.
wait_holds() {
	local L=$1 what=$2 out=$3
	shift 3
	if ! java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "$@")" --database wt_a --table orders --timeout 0 >"$SC/wait.cmp"; then
		fail "$L wait: $what: hmssync wait said \"$out\" but the FE does not hold wt_a.orders as the metastore does (event $WAIT_ID): $(cat "$SC/wait.cmp")"
		return 1
	fi
}

# wait_check LABEL PROFILE: see the file comment. Uses the running metastore, etcd, fake FEs and the
# three sidecars.
wait_check() {
	local L=$1 profile=$2 out at w3 changes='{"native":true,"match":"/changes"'
	if ! has_command wait --catalog; then
		skip "$L wait: hmssync wait is not built yet"
		return
	fi
	# wt_b exists before the per-table part, so that later writes to it are ADD_PARTITION events
	# only (CREATE_DATABASE counts for every database's target).
	wait_write "$L" wt_b w0 || return

	wait_write "$L" wt_a w1 || return
	if ! out=$("$HMSSYNC" wait --url "http://${SC_ADDR[1]}" --catalog hive --timeout 60s 2>&1); then
		fail "$L wait: member scope on m1 after the real client added a partition (event $WAIT_ID): $out"
		return
	fi
	[[ "$out" == "caught up: hive at "* ]] || { fail "$L wait: member scope printed \"$out\", want \"caught up: hive at …\""; return; }
	wait_holds "$L" "member scope on m1" "$out" "${FE_ADDR[1]}" || return

	wait_write "$L" wt_a w2 || return
	if ! out=$("$HMSSYNC" wait --url "http://${SC_ADDR[2]}" --catalog hive --scope cluster --timeout 60s 2>&1); then
		fail "$L wait: cluster scope on m2 after the real client added a partition (event $WAIT_ID): $out"
		return
	fi
	wait_holds "$L" "cluster scope" "$out" "${FE_ADDR[1]}" "${FE_ADDR[2]}" "${FE_ADDR[3]}" || return

	# Per table, on m3, whose address comes from the sidecar's configuration file (--config), as
	# beside an FE.
	local m3=(env HMSSYNC_HTTP_LISTEN="${SC_ADDR[3]}" "$HMSSYNC" wait --config "$SC/sidecar.yaml" --catalog hive)
	wait_write "$L" wt_a w3 || return
	w3=$WAIT_ID
	if ! out=$("${m3[@]}" --db wt_a --table orders --timeout 60s 2>&1); then
		fail "$L wait: per table on m3 after the real client added a partition (event $w3): $out"
		return
	fi
	wait_holds "$L" "per table on m3" "$out" "${FE_ADDR[3]}" || return
	if [ "$profile" = hive3 ] || [ "$profile" = hive2 ]; then
		pass "$L wait: after the real client added a partition, hmssync wait returned and the FE held it: member scope (m1), cluster scope (every FE), per table (m3; Hive ${profile#hive} has no dbName filter: the whole log's target)"
		return
	fi
	# Hive 4 narrows the target: with m3's FE refusing batches after event $w3, a write to wt_b
	# holds m3 back on the whole log but not on wt_a.orders, whose newest event it has applied.
	java_main FEFaults --fe "http://${FE_ADDR[3]}" --clear true --add "$changes,\"http_status\":503}" >"$SC/wait.faults" 2>&1 ||
		{ fail "$L wait: could not make fake FE 3 refuse batches: $(cat "$SC/wait.faults")"; return; }
	wait_write "$L" wt_b w4 || return
	if out=$("${m3[@]}" --timeout 2s 2>&1); then
		fail "$L wait: the whole catalog on m3 caught up with its FE refusing batches ($out): the per-table part would prove nothing"
		java_main FEFaults --fe "http://${FE_ADDR[3]}" --clear true >>"$SC/wait.faults" 2>&1 || true
		return
	fi
	out=$("${m3[@]}" --db wt_a --table orders --timeout 20s 2>&1) || {
		fail "$L wait: per table on m3 with wt_b written after wt_a.orders' event $w3 and m3 held there: $out (Hive 4's dbName filter should have narrowed the target to $w3)"
		java_main FEFaults --fe "http://${FE_ADDR[3]}" --clear true >>"$SC/wait.faults" 2>&1 || true
		return
	}
	java_main FEFaults --fe "http://${FE_ADDR[3]}" --clear true >>"$SC/wait.faults" 2>&1 ||
		{ fail "$L wait: could not clear fake FE 3's faults: $(cat "$SC/wait.faults")"; return; }
	at=$(sed -n 's/^caught up: hive at \([0-9]*\) .*/\1/p' <<<"$out")
	if [ -z "$at" ] || [ "$at" -gt "$w3" ]; then
		fail "$L wait: per table on m3 printed \"$out\", want a target at or below wt_a.orders' event $w3 (the metastore is at $WAIT_ID)"
		return
	fi
	pass "$L wait: after the real client added a partition, hmssync wait returned and the FE held it: member scope (m1), cluster scope (every FE), per table (m3: \"$out\" with the metastore at $WAIT_ID and m3 held at $w3: the dbName filter narrowed the target)"
}

sidecar_checks() { # profile
	local first=${#STARTED_PIDS[@]} pid live
	sidecar_checks_in "$1"
	# Stop what this run started and is still running (a check that failed returns early). Only
	# the shell's own unreaped jobs are signalled, so a pid reaped earlier is never reused here.
	# (A process that dies of the signal makes wait fail; that is expected here, not an error.)
	live=" $(jobs -p | tr '\n' ' ') "
	for pid in "${STARTED_PIDS[@]:$first}"; do
		if [[ "$live" == *" $pid "* ]]; then kill "$pid" 2>/dev/null || true; fi
	done
	for pid in "${STARTED_PIDS[@]:$first}"; do
		if [[ "$live" == *" $pid "* ]]; then wait "$pid" 2>/dev/null || true; fi
	done
}

sidecar_checks_in() { # profile
	local profile=$1 L="$1/json" missing
	missing=$(sidecar_missing)
	if [ -n "$missing" ]; then
		skip "$L converge: needs $missing"
		skip "$L restart: needs $missing"
		skip "$L cleanup: needs $missing"
		return
	fi
	if [ -z "${SIDECAR_HMS_ARGS[$profile]:-}" ]; then
		fail "$L sidecars: no listener retention settings for profile $profile in sidecar-checks.sh"
		return
	fi
	SC="$WORK/sidecars-$profile"
	mkdir -p "$SC"
	JLOG="$SC/client.log"
	local hms_port i hms_args=() ttl interval
	read -r -a hms_args <<<"${SIDECAR_HMS_ARGS[$profile]}"
	local wl_args=()
	read -r -a wl_args <<<"${SIDECAR_WORKLOAD_ARGS[$profile]:-}"
	if [ -n "${SIDECAR_WORKLOAD_SKIP[$profile]:-}" ]; then
		not_applicable "$L ${SIDECAR_WORKLOAD_SKIP[$profile]}"
	fi
	hms_port=$(free_port)
	start_hms "$SC/hms" json --port "$hms_port" ||
		{ fail "$L sidecars: metastore did not start"; return; }

	ETCD_ADDR="127.0.0.1:$(free_port)"
	start_bg "$SC/etcd.log" "$HMSSYNC" dev etcd --listen "$ETCD_ADDR" --dir "$SC/etcd"
	wait_port "$ETCD_ADDR" 60 || { fail "$L sidecars: etcd did not start"; return; }
	declare -g -a FE_ADDR SC_ADDR SC_PID
	for i in 1 2 3; do
		FE_ADDR[$i]="127.0.0.1:$(free_port)"
		SC_ADDR[$i]="127.0.0.1:$(free_port)"
		start_bg "$SC/fe$i.log" "$HMSSYNC" dev fe --listen "${FE_ADDR[$i]}" --hms "$HMS_URI"
		wait_port "${FE_ADDR[$i]}" 60 || { fail "$L sidecars: fake FE $i did not start"; return; }
	done
	# Short lease and backoff so that a killed master is replaced, and a restarted metastore is
	# found again, within seconds.
	cat >"$SC/sidecar.yaml" <<-EOF
		cluster: realhms-e2e
		etcd:
		  lease_ttl: 4s
		  request_timeout: 1s
		fe:
		  health_interval: 1s
		  unhealthy_grace: 5s
		catalogs:
		  - name: hive
		    hms_uris: [$HMS_URI]
		    hms_timeout: 10s
		    poll_interval: 200ms
		    batch_size: $RST_BATCH
		retry:
		  initial: 100ms
		  max: 2s
		log:
		  level: info
		  format: json
		shutdown_timeout: 5s
	EOF
	"$HMSSYNC" run --config "$SC/sidecar.yaml" --check-config >"$SC/sidecar.checked" 2>&1 ||
		{ fail "$L sidecars: configuration refused: $(cat "$SC/sidecar.checked")"; return; }
	for i in 1 2 3; do
		start_sidecar "$i" || { fail "$L sidecars: sidecar $i did not listen"; return; }
	done

	# converge, then kill the master and converge again on later changes.
	java_main Workload --uri "$HMS_URI" --prefix conv1 "${wl_args[@]}" --expected "$SC/conv1.jsonl" --warehouse "file:$SC/hms/db/warehouse" >"$SC/conv1.out" 2>&1 ||
		{ fail "$L converge: workload failed"; return; }
	if ! java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${FE_ADDR[1]}" "${FE_ADDR[2]}" "${FE_ADDR[3]}")" --timeout 120 >"$SC/conv1.cmp"; then
		fail "$L converge: three sidecars"
		cat "$SC/conv1.cmp"
		return
	fi
	preflight_check "$L" "$profile"
	pushdown_check "$L" "$profile"
	wait_check "$L" "$profile"
	local m
	m=$(java_main SidecarProbe master --http "$(urls "${SC_ADDR[1]}" "${SC_ADDR[2]}" "${SC_ADDR[3]}")") ||
		{ fail "$L converge: $m"; return; }
	m=$((m + 1))
	kill -9 "${SC_PID[$m]}"
	local rest=() restfe=()
	for i in 1 2 3; do
		[ "$i" = "$m" ] && continue
		rest+=("$i")
		restfe+=("${FE_ADDR[$i]}")
	done
	java_main Workload --uri "$HMS_URI" --prefix conv2 "${wl_args[@]}" --expected "$SC/conv2.jsonl" --warehouse "file:$SC/hms/db/warehouse" >"$SC/conv2.out" 2>&1 ||
		{ fail "$L converge: second workload failed"; return; }
	if java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${restfe[@]}")" --timeout 120 >"$SC/conv2.cmp"; then
		pass "$L converge: three sidecars, then two after the master (m$m) was killed"
	else
		fail "$L converge: after killing master m$m"
		cat "$SC/conv2.cmp"
		return
	fi

	# restart: the metastore goes away while the two sidecars are partway through a backlog, and
	# comes back on the same database; they finish the backlog from where they were, with no full
	# refresh. The sync is slowed down by the fake FEs, not raced: while the workload makes the
	# backlog the FEs refuse every batch (HTTP 503, which hmssync retries in place, so no cursor
	# moves); then they answer each batch after RST_DELAY, so that the sidecars, reading
	# batch_size events at a time, need RST_DELAY per batch_size events. Every wait below is for
	# evidence (cursors, /status), never a pause.
	local restsc=("${SC_ADDR[${rest[0]}]}" "${SC_ADDR[${rest[1]}]}") r0 r1 from to at_stop failed_on
	local changes='{"native":true,"match":"/changes"' # the native protocol's batch requests
	r0=$(java_main SidecarProbe full-refreshes --http "$(urls "${restsc[@]}")")
	java_main FEFaults --fe "$(urls "${restfe[@]}")" --clear true --add "$changes,\"http_status\":503}" >"$SC/rst.faults" 2>&1 ||
		{ fail "$L restart: could not make the fake FEs refuse batches: $(cat "$SC/rst.faults")"; return; }
	java_main Workload --uri "$HMS_URI" --prefix rst "${wl_args[@]}" --expected "$SC/rst.jsonl" --warehouse "file:$SC/hms/db/warehouse" >"$SC/rst.out" 2>&1 ||
		{ fail "$L restart: workload failed"; return; }
	from=$(sed -n 's/^WORKLOAD DONE from_event_id=\([0-9]*\) to_event_id=\([0-9]*\).*/\1/p' "$SC/rst.out")
	to=$(sed -n 's/^WORKLOAD DONE from_event_id=\([0-9]*\) to_event_id=\([0-9]*\).*/\2/p' "$SC/rst.out")
	if [ -z "$from" ] || [ -z "$to" ] || [ $((to - from)) -lt $((4 * RST_BATCH)) ]; then
		fail "$L restart: the workload's events (${from:-?}..${to:-?}] are too few for a backlog of several batches of $RST_BATCH"
		return
	fi
	java_main FEFaults --fe "$(urls "${restfe[@]}")" --clear true --add "$changes,\"delay\":\"$RST_DELAY\"}" >>"$SC/rst.faults" 2>&1 ||
		{ fail "$L restart: could not slow the fake FEs down: $(cat "$SC/rst.faults")"; return; }
	# Both sidecars have applied part of the backlog and not all of it.
	if ! java_main SidecarProbe cursors --http "$(urls "${restsc[@]}")" --above "$from" --below "$to" --timeout 60 >"$SC/rst.partway"; then
		fail "$L restart: the sidecars were not partway through events ($from..$to]: $(cat "$SC/rst.partway")"
		return
	fi
	stop_hms "$SC/hms" || { fail "$L restart: metastore did not stop cleanly"; return; }
	# Evidence that the sidecars found the metastore gone: the master reads the metastore's current
	# id at the start of every cycle, and a failed read shows in its /status as the step's error.
	# (hmssync_retries_total, the evidence before, also counts FE failures: the fake FE answers 503
	# to a batch it cannot load from the metastore; its error names the metastore too, so the text
	# matched is the sidecar's own read.) With the metastore gone no cursor can move on (a follower
	# never passes the master's), so the cursors read after that are where the restart found them.
	if ! failed_on=$(java_main SidecarProbe failing --http "$(urls "${restsc[@]}")" \
		--error "read the metastore's current event id" --timeout 60); then
		fail "$L restart: no sidecar failed on a metastore read within 60 s of the metastore stopping: $failed_on"
		return
	fi
	log "$L restart: m${rest[${failed_on%% *}]} found the metastore gone: ${failed_on#* }"
	if ! at_stop=$(java_main SidecarProbe cursors --http "$(urls "${restsc[@]}")" --above "$from" --below "$to" --timeout 0); then
		fail "$L restart: the sidecars were not inside the backlog ($from..$to] when the metastore was gone (they read it faster than the FEs' $RST_DELAY per batch allows?): $at_stop"
		return
	fi
	start_hms "$SC/hms" json --port "$hms_port" ||
		{ fail "$L restart: metastore did not start again"; return; }
	java_main FEFaults --fe "$(urls "${restfe[@]}")" --clear true >>"$SC/rst.faults" 2>&1 ||
		{ fail "$L restart: could not clear the fake FEs' faults: $(cat "$SC/rst.faults")"; return; }
	if ! java_main SidecarProbe cursors --http "$(urls "${restsc[@]}")" --above $((to - 1)) --timeout 120 >"$SC/rst.done"; then
		fail "$L restart: the sidecars did not finish the backlog up to event $to after the restart: $(cat "$SC/rst.done")"
		return
	fi
	if java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${restfe[@]}")" --timeout 120 >"$SC/rst.cmp"; then
		r1=$(java_main SidecarProbe full-refreshes --http "$(urls "${restsc[@]}")")
		if [ "$r1" -eq "$r0" ]; then
			pass "$L restart: metastore restarted while m${rest[0]}, m${rest[1]} were at events ${at_stop/ / and } of ($from..$to] (batches of $RST_BATCH, FE answering each after $RST_DELAY); they finished the backlog and converged with no full refresh"
		else
			fail "$L restart: full refreshes went from $r0 to $r1"
		fi
	else
		fail "$L restart: no convergence after the metastore restart"
		cat "$SC/rst.cmp"
	fi

	# cleanup: every sidecar stopped, changes made and cleaned by the TTL, two sidecars back. Both
	# were behind the cleaned range, so each must do exactly one full refresh, for the gap.
	for i in "${rest[@]}"; do kill "${SC_PID[$i]}" 2>/dev/null || true; wait "${SC_PID[$i]}" 2>/dev/null || true; done
	stop_hms "$SC/hms" || { fail "$L cleanup: metastore did not stop cleanly"; return; }
	start_hms "$SC/hms" json --port "$hms_port" "${hms_args[@]}" ||
		{ fail "$L cleanup: metastore did not start again with the short TTL"; return; }
	ttl=$(grep 'REALHMS READY' "$SC/hms/launcher.out" | tail -1 | sed -n 's/.* ttl_seconds=\([0-9]*\).*/\1/p')
	interval=$(grep 'REALHMS READY' "$SC/hms/launcher.out" | tail -1 | sed -n 's/.* clean_interval_seconds=\([0-9]*\).*/\1/p')
	if [ -z "$ttl" ] || [ -z "$interval" ]; then
		fail "$L cleanup: the launcher did not report ttl_seconds and clean_interval_seconds"
		return
	fi
	local before oldest cur
	before=$(java_main EventDump --uri "$HMS_URI" --ids true | sed 's/.*current=//')
	java_main Workload --uri "$HMS_URI" --prefix cln "${wl_args[@]}" --expected "$SC/cln.jsonl" --warehouse "file:$SC/hms/db/warehouse" >"$SC/cln.out" 2>&1 ||
		{ fail "$L cleanup: workload failed"; return; }
	# Wait until the TTL has emptied the log, as it does on an idle metastore: nothing after the
	# sidecars' cursor is left to read, only the current id shows that changes were made. The
	# last event is older than the TTL after ttl seconds, and the cleaner runs within one interval
	# after that; 30 s more for slow runs.
	local wait_s=$((ttl + interval + 30)) deadline
	deadline=$((SECONDS + wait_s))
	while [ $SECONDS -lt $deadline ]; do
		read -r oldest cur < <(java_main EventDump --uri "$HMS_URI" --ids true | sed 's/oldest=\([0-9]*\) current=\([0-9]*\)/\1 \2/')
		[ "$oldest" -eq 0 ] && break # an empty log has oldest 0
		sleep 1
	done
	if [ "$oldest" -ne 0 ]; then
		fail "$L cleanup: the listener (TTL ${ttl}s, cleaning every ${interval}s) did not empty the log within ${wait_s}s (it still holds events $oldest..$cur)"
		return
	fi
	log "$L cleanup: sidecars stopped at event $before; events after it up to $cur were made and cleaned, the log is empty"
	for i in "${rest[@]}"; do
		start_sidecar "$i" || { fail "$L cleanup: sidecar m$i did not come back"; return; }
	done
	if java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${restfe[@]}")" --timeout 120 >"$SC/cln.cmp"; then
		# A restarted process starts its counters at zero: its full refreshes since the restart are
		# the whole count. Each must be 1 in all, and 1 with reason "gap".
		local all gap
		all=$(java_main SidecarProbe full-refreshes --http "$(urls "${restsc[@]}")" --each true)
		gap=$(java_main SidecarProbe full-refreshes --http "$(urls "${restsc[@]}")" --each true --reason gap)
		if [ "$all" = "1 1" ] && [ "$gap" = "1 1" ]; then
			pass "$L cleanup: events ($before..$cur] cleaned; each of m${rest[0]}, m${rest[1]} did exactly one full refresh (gap) and converged"
		else
			fail "$L cleanup: full refreshes per sidecar after the cleaned gap: $all (of them for the gap: $gap); want exactly 1 each, for the gap"
		fi
	else
		fail "$L cleanup: no convergence after the cleaned gap"
		cat "$SC/cln.cmp"
	fi
	stop_hms "$SC/hms" || true
}
