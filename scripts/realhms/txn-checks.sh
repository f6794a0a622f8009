# shellcheck shell=bash
# Sourced by run-e2e.sh (uses its log/pass/fail/skip/not_applicable, start_hms/stop_hms, java_main,
# HMSSYNC, CP, WORK, STARTED_PIDS, MVN_ARGS, and sidecar-checks.sh's free_port, wait_port, start_bg).
# `txn_checks PROFILE`: transactional tables against one real Hive metastore (json encoding), with
# the real Hive client (TxnWorkload, TxnCompact) on an insert-only transactional table
# (transactional=true, transactional_properties=insert_only: a metastore without Hive's query
# engine refuses full ACID tables, and insert-only ones log the same transaction events):
#   txn events    open, allocate a write id, commit; open, allocate, abort; a read-only
#                 transaction; on Hive 4 a compaction of a partition: the metastore logs OPEN_TXN,
#                 ALLOC_WRITE_ID_EVENT, COMMIT_TXN, ABORT_TXN (and COMMIT_COMPACTION_EVENT) in that
#                 order, no INSERT; the capture ($WORK/txn-PROFILE/txn-events.jsonl, EventDump's
#                 form) is compared with the fake metastore's events by hms/hmstest's
#                 TestTxnMessagesMatchHive (HMSTEST_TXN_CAPTURE): members, their order and kinds,
#                 headers (dbName, tableName, catName)
#   txn refresh   one `hmssync run` sidecar (native dialect, `dev fe --hms`, `dev etcd`): after an
#                 allocation the FE has no refresh of the table although the sidecar's cursor is
#                 past it; after the commit it gets REFRESH_TABLE/REFRESH_PARTITIONS of the table
#                 with the COMMIT_TXN's event id
#   txn abort     an allocation then an abort: no refresh of the table, the cursor past the abort
#   txn restart   an allocation, the sidecar killed (SIGKILL) once its cursor is past it and started
#                 again, then the commit: the FE still gets the table's refresh at the commit
#   txn compaction (Hive 4) the FE gets a refresh of the compacted table at COMMIT_COMPACTION_EVENT
# The TXN tables exist only when the metastore's database is made by Hive's own Derby schema script
# (schematool's, in the metastore's bin tarball on Maven Central, fetched with Maven); DataNucleus,
# which makes the schema of the other checks, creates only its model's tables.
# Everything started here is stopped before it returns.

# The schema script per profile: Maven artifact of the bin tarball and the script inside it.
declare -A TXN_SCHEMA_ARTIFACT=(
	[hive3]="org.apache.hive:hive-standalone-metastore:3.1.3:tar.gz:bin"
	[hive4]="org.apache.hive:hive-standalone-metastore-server:4.0.1:tar.gz:bin"
)
declare -A TXN_SCHEMA_SCRIPT=(
	[hive3]="scripts/metastore/upgrade/derby/hive-schema-3.1.0.derby.sql"
	[hive4]="scripts/metastore/upgrade/derby/hive-schema-4.0.0.derby.sql"
)
# The transaction events each version logs for the txn events check's steps, in order.
declare -A TXN_EXPECTED=(
	[hive3]="OPEN_TXN ALLOC_WRITE_ID_EVENT COMMIT_TXN OPEN_TXN ALLOC_WRITE_ID_EVENT ABORT_TXN OPEN_TXN COMMIT_TXN"
	[hive4]="OPEN_TXN ALLOC_WRITE_ID_EVENT COMMIT_TXN OPEN_TXN ALLOC_WRITE_ID_EVENT ABORT_TXN OPEN_TXN COMMIT_TXN OPEN_TXN COMMIT_TXN COMMIT_COMPACTION_EVENT"
)

# txn_schema PROFILE -> prints the schema script's path (fetched into $WORK/schema-PROFILE).
txn_schema() {
	local profile=$1 dir="$WORK/schema-$1" tgz
	mkdir -p "$dir"
	(cd "$HERE" && mvn "${MVN_ARGS[@]}" dependency:copy -Dartifact="${TXN_SCHEMA_ARTIFACT[$profile]}" \
		-DoutputDirectory="$dir") >"$dir/mvn.log" 2>&1 || { tail -5 "$dir/mvn.log" >&2; return 1; }
	tgz=$(ls "$dir"/*.tar.gz) || return 1
	tar xzf "$tgz" -C "$dir" --wildcards "*/scripts/metastore/upgrade/derby/*" || return 1
	ls "$dir"/*/"${TXN_SCHEMA_SCRIPT[$profile]}"
}

txn_step() { # out-file args... -> prints the TXN line's value of the key named by TXN_KEY
	java_main "$@" >"$TX/step.out" 2>&1 || { sed 's/^/    /' "$TX/step.out" | tail -5 >&2; return 1; }
	grep '^TXN ' "$TX/step.out" | tail -1
}

# field LINE KEY -> the value of KEY=VALUE in LINE
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

txn_checks() { # profile
	local first=${#STARTED_PIDS[@]} pid live
	txn_checks_in "$1"
	live=" $(jobs -p | tr '\n' ' ') "
	for pid in "${STARTED_PIDS[@]:$first}"; do
		if [[ "$live" == *" $pid "* ]]; then kill "$pid" 2>/dev/null || true; fi
	done
	for pid in "${STARTED_PIDS[@]:$first}"; do
		if [[ "$live" == *" $pid "* ]]; then wait "$pid" 2>/dev/null || true; fi
	done
}

txn_checks_in() { # profile
	local profile=$1 L="$1/json txn" schema u db=acid_t table=orders part="dt=2024-01-01/region=eu"
	if [ -z "${TXN_SCHEMA_ARTIFACT[$profile]:-}" ]; then
		not_applicable "$L: no transaction events in Hive's notification log for profile $profile"
		return
	fi
	TX="$WORK/txn-$profile"
	mkdir -p "$TX"
	JLOG="$TX/client.log"
	schema=$(txn_schema "$profile") || { fail "$L events: Hive's schema script ${TXN_SCHEMA_ARTIFACT[$profile]} not fetched"; return; }
	start_hms "$TX/hms" json --port "$(free_port)" --schema-script "$schema" ||
		{ fail "$L events: metastore did not start with $schema"; return; }
	u=$HMS_URI

	# txn events: the real client's steps, then the log they made.
	local out from txn alloc commit abort ro end
	out=$(txn_step TxnWorkload create --uri "$u" --db "$db" --table "$table" --partitioned true \
		--warehouse "file:$TX/hms/db/warehouse") || { fail "$L events: creating $db.$table"; return; }
	[ "$(field "$out" transactional)" = true ] && [ "$(field "$out" properties)" = insert_only ] ||
		{ fail "$L events: the metastore did not keep $db.$table transactional: $out"; return; }
	from=$(field "$out" event_id)
	txn=$(field "$(txn_step TxnWorkload open --uri "$u")" txn) &&
		txn_step TxnWorkload alloc --uri "$u" --txn "$txn" --db "$db" --table "$table" >/dev/null &&
		txn_step TxnWorkload commit --uri "$u" --txn "$txn" >/dev/null &&
		txn=$(field "$(txn_step TxnWorkload open --uri "$u")" txn) &&
		txn_step TxnWorkload alloc --uri "$u" --txn "$txn" --db "$db" --table "$table" >/dev/null &&
		txn_step TxnWorkload abort --uri "$u" --txn "$txn" >/dev/null &&
		txn=$(field "$(txn_step TxnWorkload open --uri "$u")" txn) &&
		end=$(field "$(txn_step TxnWorkload commit --uri "$u" --txn "$txn")" event_id) ||
		{ fail "$L events: a transaction step failed"; return; }
	if [ "$profile" = hive4 ]; then
		end=$(field "$(txn_step TxnCompact --uri "$u" --db "$db" --table "$table" --partition "$part")" event_id) ||
			{ fail "$L events: compaction failed"; return; }
	fi
	java_main EventDump --uri "$u" --from "$from" >"$TX/txn-events.jsonl" 2>"$TX/dump.err"
	local got
	got=$(grep -o '"eventType":"[A-Z_]*"' "$TX/txn-events.jsonl" | cut -d'"' -f4 | tr '\n' ' ' | sed 's/ $//')
	if [ "$got" = "${TXN_EXPECTED[$profile]}" ] && [ "$(wc -l <"$TX/txn-events.jsonl")" -eq $((end - from)) ]; then
		pass "$L events: ($from,$end] = $got"
	else
		fail "$L events: ($from,$end] logged [$got], want [${TXN_EXPECTED[$profile]}]"
	fi
	if (cd "$ROOT" && env "HMSTEST_TXN_CAPTURE_${profile^^}=$TX/txn-events.jsonl" go test -count=1 -run 'TestTxnMessagesMatchHive' ./hms/hmstest/) >"$TX/fake-vs-real.out" 2>&1; then
		pass "$L events: the fake metastore's transaction events match these (TestTxnMessagesMatchHive)"
	else
		fail "$L events: the fake metastore's transaction events differ from these:"
		sed 's/^/    /' "$TX/fake-vs-real.out" | head -20
	fi

	# The sidecar: one member, native dialect, its fake FE loading from the metastore.
	local missing
	missing=$(sidecar_missing)
	if [ -n "$missing" ]; then
		skip "$L refresh: needs $missing"
		return
	fi
	ETCD_ADDR="127.0.0.1:$(free_port)"
	start_bg "$TX/etcd.log" "$HMSSYNC" dev etcd --listen "$ETCD_ADDR" --dir "$TX/etcd"
	wait_port "$ETCD_ADDR" 60 || { fail "$L refresh: etcd did not start"; return; }
	local fe="127.0.0.1:$(free_port)" sc="127.0.0.1:$(free_port)" sc_pid
	start_bg "$TX/fe.log" "$HMSSYNC" dev fe --listen "$fe" --hms "$u"
	wait_port "$fe" 60 || { fail "$L refresh: fake FE did not start"; return; }
	cat >"$TX/sidecar.yaml" <<-EOF
		cluster: realhms-txn
		etcd:
		  lease_ttl: 4s
		  request_timeout: 1s
		catalogs:
		  - name: hive
		    hms_uris: [$u]
		    hms_timeout: 10s
		    poll_interval: 200ms
		retry:
		  initial: 100ms
		  max: 2s
		log:
		  level: info
		  format: json
		shutdown_timeout: 5s
	EOF
	txn_sidecar() {
		start_bg "$TX/sidecar.log" "$HMSSYNC" run --config "$TX/sidecar.yaml" --member m1 \
			--etcd-endpoints "http://$ETCD_ADDR" --fe-url "http://$fe" --fe-dialect native --http-listen "$sc"
		sc_pid=$LAST_PID
		wait_port "$sc" 60
	}
	txn_sidecar || { fail "$L refresh: the sidecar did not listen"; return; }
	# cursor_at N: the sidecar's cursor is at N or past it (its /status).
	cursor_at() { java_main SidecarProbe cursors --http "http://$sc" --above $(($1 - 1)) --timeout 60 >"$TX/cursor.out" 2>&1; }
	refreshes() { java_main TxnProbe refreshes --fe "http://$fe" --db "$db" --table "$table" "$@"; }
	cursor_at "$end" || { fail "$L refresh: the sidecar did not catch up to $end: $(cat "$TX/cursor.out")"; return; }

	# refresh: none after the allocation, one at the commit.
	local base r
	base=$(java_main EventDump --uri "$u" --ids true | sed -n 's/.*current=\([0-9]*\).*/\1/p')
	txn=$(field "$(txn_step TxnWorkload open --uri "$u")" txn) &&
		alloc=$(field "$(txn_step TxnWorkload alloc --uri "$u" --txn "$txn" --db "$db" --table "$table")" event_id) ||
		{ fail "$L refresh: open/alloc failed"; return; }
	cursor_at "$alloc" || { fail "$L refresh: the sidecar's cursor did not pass the allocation ($alloc): $(cat "$TX/cursor.out")"; return; }
	r=$(refreshes --after "$base")
	if [[ "$r" != "REFRESHES n=0 "* ]]; then
		fail "$L refresh: the FE got a refresh before the commit (allocation at $alloc): $r"
	else
		commit=$(field "$(txn_step TxnWorkload commit --uri "$u" --txn "$txn")" event_id) || { fail "$L refresh: commit failed"; return; }
		if r=$(refreshes --after "$base" --await "$commit" --timeout 60); then
			pass "$L refresh: none after the allocation ($alloc, cursor past it), $db.$table at the commit ($commit): $r"
		else
			fail "$L refresh: $r"
		fi
	fi

	# abort: an allocation and an abort refresh nothing.
	base=$(java_main EventDump --uri "$u" --ids true | sed -n 's/.*current=\([0-9]*\).*/\1/p')
	txn=$(field "$(txn_step TxnWorkload open --uri "$u")" txn) &&
		txn_step TxnWorkload alloc --uri "$u" --txn "$txn" --db "$db" --table "$table" >/dev/null &&
		abort=$(field "$(txn_step TxnWorkload abort --uri "$u" --txn "$txn")" event_id) ||
		{ fail "$L abort: open/alloc/abort failed"; return; }
	if ! cursor_at "$abort"; then
		fail "$L abort: the sidecar's cursor did not pass the abort ($abort): $(cat "$TX/cursor.out")"
	elif r=$(refreshes --after "$base") && [[ "$r" == "REFRESHES n=0 "* ]]; then
		pass "$L abort: no refresh for ($base,$abort], the cursor past it"
	else
		fail "$L abort: the FE got a refresh for an aborted transaction: $r"
	fi

	# restart: the sidecar is killed between the allocation and the commit.
	base=$(java_main EventDump --uri "$u" --ids true | sed -n 's/.*current=\([0-9]*\).*/\1/p')
	txn=$(field "$(txn_step TxnWorkload open --uri "$u")" txn) &&
		alloc=$(field "$(txn_step TxnWorkload alloc --uri "$u" --txn "$txn" --db "$db" --table "$table")" event_id) ||
		{ fail "$L restart: open/alloc failed"; return; }
	cursor_at "$alloc" || { fail "$L restart: the sidecar's cursor did not pass the allocation ($alloc)"; return; }
	kill -9 "$sc_pid"
	wait "$sc_pid" 2>/dev/null || true
	commit=$(field "$(txn_step TxnWorkload commit --uri "$u" --txn "$txn")" event_id) || { fail "$L restart: commit failed"; return; }
	txn_sidecar || { fail "$L restart: the sidecar did not listen again"; return; }
	if r=$(refreshes --after "$base" --await "$commit" --timeout 60) && [[ "$r" != *full:* ]]; then
		pass "$L restart: killed after the allocation ($alloc), started again, $db.$table refreshed at the commit ($commit): $r"
	else
		fail "$L restart: $r"
	fi

	if [ "$profile" = hive4 ]; then
		base=$(java_main EventDump --uri "$u" --ids true | sed -n 's/.*current=\([0-9]*\).*/\1/p')
		end=$(field "$(txn_step TxnCompact --uri "$u" --db "$db" --table "$table" --partition "$part")" event_id) ||
			{ fail "$L compaction: compaction failed"; return; }
		if r=$(refreshes --after "$base" --await "$end" --timeout 60); then
			pass "$L compaction: $db.$table refreshed at COMMIT_COMPACTION_EVENT ($end): $r"
		else
			fail "$L compaction: $r"
		fi
	else
		not_applicable "$L compaction: Hive 3.1 logs no compaction event"
	fi
	stop_hms "$TX/hms" || fail "$L: metastore did not stop cleanly"
}
