# shellcheck shell=bash
# Sourced by run-e2e.sh (with sidecar-checks.sh and kdc.sh). The sidecar checks over Kerberos
# against one real Hive metastore (`kerberos_checks PROFILE`, json encoding): a throwaway MIT KDC on
# loopback (kdc.sh) whose tickets live KRB_LIFE seconds; the metastore with
# hive.metastore.sasl.enabled=true, hadoop.security.authentication=kerberos, its principal
# hive/localhost and keytab (Launcher, Kerberos.java); the suite's Hive clients log in as
# hiveclient; three `hmssync run` sidecars with hms_auth (principal sync, a keytab) and their
# fake FEs (`dev fe --hms --auth-*`). Checks:
#   converge   the three converge on what the Hive client lists, also after the master is killed
#   refusals   a sidecar with another principal's keytab, one with a stale keytab (the principal's
#              keys changed after it was exported) and one whose principal the KDC does not know
#              stay up, /readyz 503 naming the keytab or the principal
#   kdc down   with a follower stopped, changes are made and synced by the master; the KDC is
#              stopped and the follower started: it cannot log in, says the KDC is unreachable and
#              retries in place; the KDC is started again and it catches up with no full refresh
#   kdc down, backlog
#              the sidecars hold (pause key) while a backlog is written, the KDC is stopped and the
#              pause released: they drain the backlog with the logins and connections they have,
#              and, once the KDC is back, converge with no full refresh. Its time hides in the
#              expiry check's wait.
#   expiry     once KRB_LIFE has passed since the sidecars last logged in (every ticket they had
#              has expired), the metastore is restarted, now with hadoop.rpc.protection=integrity:
#              they reconnect with fresh tickets (renewed or obtained again from the keytab),
#              negotiating QOP auth-int, and converge on the changes made after that
# Everything started here is stopped before it returns.

# The realm's ticket lifetime: short, so that the expiry check runs within the suite, long enough
# that no ticket expires inside a Hive client's run of the workload.
KRB_LIFE=${REALHMS_KRB_LIFE:-75}

kerberos_checks() { # profile
	local first=${#STARTED_PIDS[@]} pid live
	kerberos_checks_in "$1"
	live=" $(jobs -p | tr '\n' ' ') "
	for pid in "${STARTED_PIDS[@]:$first}"; do
		if [[ "$live" == *" $pid "* ]]; then kill "$pid" 2>/dev/null || true; fi
	done
	for pid in "${STARTED_PIDS[@]:$first}"; do
		if [[ "$live" == *" $pid "* ]]; then wait "$pid" 2>/dev/null || true; fi
	done
	CLIENT_JAVA_OPTS=()
	HMS_JAVA_OPTS=()
}

# readyz_refuses ADDR TEXT SECONDS: /readyz answers 503 with TEXT in its body within SECONDS.
readyz_refuses() {
	local deadline=$(($SECONDS + $3)) body code
	while [ $SECONDS -lt $deadline ]; do
		body=$(curl -s -w '\n%{http_code}' "http://$1/readyz" 2>/dev/null || true)
		code=${body##*$'\n'}
		if [ "$code" = 503 ] && grep -qF -- "$2" <<<"$body"; then return 0; fi
		sleep 0.5
	done
	echo "${body:-no answer}"
	return 1
}

kerberos_checks_in() { # profile
	local profile=$1 L="$1/kerberos"
	if ! kdc_available; then
		skip "$L: needs Debian's krb5-kdc and krb5-admin-server (krb5kdc, kdb5_util, kadmin.local in /usr/sbin)"
		return
	fi
	KS="$WORK/kerberos-$profile"
	mkdir -p "$KS"
	JLOG="$KS/client.log"
	kdc_start "$KS/kdc" "$(free_port)" "$KRB_LIFE" || { fail "$L: the KDC did not start"; return; }
	local p
	for p in hive/localhost hiveclient sync other stale ghost; do
		kdc_addprinc "$p" >"$KS/kadmin.log" || { fail "$L: kadmin addprinc $p: $(cat "$KS/kadmin.log")"; return; }
	done
	for p in hive/localhost hiveclient sync other stale ghost; do
		kdc_keytab "$p" "$KS/${p//\//_}.keytab" >"$KS/kadmin.log" || { fail "$L: kadmin ktadd $p: $(cat "$KS/kadmin.log")"; return; }
	done
	kdc_rotate stale >/dev/null && kdc_delprinc ghost >/dev/null || { fail "$L: kadmin could not make the stale and unknown principals"; return; }
	local service="hive/_HOST@$REALM"
	# Hadoop 3.1 (Hive 3.1.3's) reads the default realm through sun.security.krb5.Config, which
	# Java 17 exports only on request.
	local jgss=--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED
	HMS_JAVA_OPTS=("$jgss" -Djava.security.krb5.conf="$KRB5_CONF" -Drealhms.krb.principal="hive/localhost@$REALM"
		-Drealhms.krb.keytab="$KS/hive_localhost.keytab" -Drealhms.krb.service="$service")
	CLIENT_JAVA_OPTS=("$jgss" -Djava.security.krb5.conf="$KRB5_CONF" -Drealhms.krb.principal="hiveclient@$REALM"
		-Drealhms.krb.keytab="$KS/hiveclient.keytab" -Drealhms.krb.service="$service")
	local hms_port
	hms_port=$(free_port)
	start_hms "$KS/hms" json --port "$hms_port" || { fail "$L: the Kerberized metastore did not start"; return; }
	local auth=(--auth-service-principal "$service" --auth-client-principal "sync@$REALM"
		--auth-keytab "$KS/sync.keytab" --auth-krb5-conf "$KRB5_CONF")

	ETCD_ADDR="127.0.0.1:$(free_port)"
	start_bg "$KS/etcd.log" "$HMSSYNC" dev etcd --listen "$ETCD_ADDR" --dir "$KS/etcd"
	wait_port "$ETCD_ADDR" 60 || { fail "$L: etcd did not start"; return; }
	local i
	declare -g -a KFE_ADDR KSC_ADDR KSC_PID
	for i in 1 2 3 4; do
		KFE_ADDR[$i]="127.0.0.1:$(free_port)"
		KSC_ADDR[$i]="127.0.0.1:$(free_port)"
		start_bg "$KS/fe$i.log" "$HMSSYNC" dev fe --listen "${KFE_ADDR[$i]}" --hms "$HMS_URI" "${auth[@]}"
		wait_port "${KFE_ADDR[$i]}" 60 || { fail "$L: fake FE $i did not start"; return; }
	done
	kerberos_config "$KS/sidecar.yaml" "sync@$REALM" "$KS/sync.keytab"
	"$HMSSYNC" run --config "$KS/sidecar.yaml" --check-config >"$KS/sidecar.checked" 2>&1 ||
		{ fail "$L: configuration refused: $(cat "$KS/sidecar.checked")"; return; }
	local t_login=$SECONDS
	for i in 1 2 3; do
		kerberos_sidecar "$i" "$KS/sidecar.yaml" || { fail "$L: sidecar $i did not listen"; return; }
	done

	# converge, then kill the master and converge again.
	java_main Workload --uri "$HMS_URI" --prefix kconv1 --expected "$KS/kconv1.jsonl" --warehouse "file:$KS/hms/db/warehouse" >"$KS/kconv1.out" 2>&1 ||
		{ fail "$L converge: the Kerberized Hive client's workload failed: $(grep -m1 Exception "$KS/kconv1.out")"; return; }
	if ! java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${KFE_ADDR[1]}" "${KFE_ADDR[2]}" "${KFE_ADDR[3]}")" --timeout 120 >"$KS/kconv1.cmp"; then
		fail "$L converge: three sidecars over Kerberos"
		cat "$KS/kconv1.cmp"
		return
	fi
	local m
	m=$(java_main SidecarProbe master --http "$(urls "${KSC_ADDR[1]}" "${KSC_ADDR[2]}" "${KSC_ADDR[3]}")") ||
		{ fail "$L converge: $m"; return; }
	m=$((m + 1))
	kill -9 "${KSC_PID[$m]}"
	local rest=()
	for i in 1 2 3; do [ "$i" = "$m" ] || rest+=("$i"); done
	java_main Workload --uri "$HMS_URI" --prefix kconv2 --expected "$KS/kconv2.jsonl" --warehouse "file:$KS/hms/db/warehouse" >"$KS/kconv2.out" 2>&1 ||
		{ fail "$L converge: second workload failed"; return; }
	if java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${KFE_ADDR[${rest[0]}]}" "${KFE_ADDR[${rest[1]}]}")" --timeout 120 >"$KS/kconv2.cmp"; then
		pass "$L converge: three sidecars over Kerberos (hms_auth, keytab), then two after the master (m$m) was killed"
	else
		fail "$L converge: after killing master m$m"
		cat "$KS/kconv2.cmp"
		return
	fi

	# refusals: each wrong credential keeps a sidecar up but not ready, naming what to fix.
	local name principal keytab want out ok=1 said=()
	for name in other stale ghost; do
		case $name in
		other) principal="sync@$REALM" keytab="$KS/other.keytab" want="no key for sync@$REALM" ;;
		stale) principal="stale@$REALM" keytab="$KS/stale.keytab" want="stale key version" ;;
		ghost) principal="ghost@$REALM" keytab="$KS/ghost.keytab" want="check hms_auth.client_principal" ;;
		esac
		kerberos_config "$KS/sidecar-$name.yaml" "$principal" "$keytab" "realhms-kerberos-$name" # alone: never a candidate
		kerberos_sidecar 4 "$KS/sidecar-$name.yaml" || { fail "$L refusals: the $name sidecar did not listen"; ok=0; break; }
		if out=$(readyz_refuses "${KSC_ADDR[4]}" "$want" 60); then
			said+=("$name: \"$want\"")
		else
			fail "$L refusals: a sidecar with the $name keytab: /readyz did not refuse naming \"$want\": $out"
			ok=0
		fi
		kill -0 "${KSC_PID[4]}" 2>/dev/null || { fail "$L refusals: the $name sidecar exited instead of staying up"; ok=0; }
		kill "${KSC_PID[4]}" 2>/dev/null || true
		wait "${KSC_PID[4]}" 2>/dev/null || true
	done
	[ "$ok" = 1 ] && pass "$L refusals: sidecars stayed up, not ready, naming what to fix (${said[*]})"

	# kdc down: a follower that must log in while the KDC is stopped.
	local f master_i
	master_i=$(java_main SidecarProbe master --http "$(urls "${KSC_ADDR[${rest[0]}]}" "${KSC_ADDR[${rest[1]}]}")") ||
		{ fail "$L kdc down: no master: $master_i"; return; }
	f=${rest[$((1 - master_i))]}
	kill "${KSC_PID[$f]}" 2>/dev/null || true
	wait "${KSC_PID[$f]}" 2>/dev/null || true
	java_main Workload --uri "$HMS_URI" --prefix kdown --expected "$KS/kdown.jsonl" --warehouse "file:$KS/hms/db/warehouse" >"$KS/kdown.out" 2>&1 ||
		{ fail "$L kdc down: workload failed"; return; }
	kdc_stop
	kerberos_sidecar "$f" "$KS/sidecar.yaml" || { fail "$L kdc down: m$f did not listen"; return; }
	if ! out=$(java_main SidecarProbe failing --http "http://${KSC_ADDR[$f]}" --error "KDC is unreachable" --timeout 60); then
		fail "$L kdc down: m$f did not report the KDC unreachable within 60 s: $out"
		return
	fi
	local body
	body=$(curl -s "http://${KSC_ADDR[$f]}/readyz" || true)
	if grep -q "misconfigured" <<<"$body"; then
		fail "$L kdc down: an unreachable KDC was taken for a configuration error: $body"
		return
	fi
	kdc_resume || { fail "$L kdc down: the KDC did not start again"; return; }
	local t_relogin=$SECONDS # m$f logs in from now on
	if java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${KFE_ADDR[${rest[0]}]}" "${KFE_ADDR[${rest[1]}]}")" --timeout 120 >"$KS/kdown.cmp"; then
		local fr
		fr=$(java_main SidecarProbe full-refreshes --http "http://${KSC_ADDR[$f]}")
		if [ "$fr" = 0 ]; then
			pass "$L kdc down: m$f, started with the KDC stopped, reported it unreachable, retried, and caught up with no full refresh once it was back"
		else
			fail "$L kdc down: m$f did $fr full refreshes after the KDC came back, want none"
		fi
	else
		fail "$L kdc down: no convergence after the KDC came back"
		cat "$KS/kdown.cmp"
		return
	fi

	# kdc down, backlog: the sidecars drain a backlog with the KDC stopped.
	kerberos_backlog_check "$L" || return

	# expiry: once every ticket the sidecars got so far has expired (the last login was m$f's,
	# after the KDC came back), every connection must be made anew. The wait is for wall-clock
	# time to pass, not for an event.
	local left=$((t_relogin + KRB_LIFE + 5 - SECONDS))
	if [ "$left" -gt 0 ]; then
		log "$L expiry: waiting ${left}s for the sidecars' tickets (lifetime ${KRB_LIFE}s) to expire"
		sleep "$left"
	fi
	local qop_before=()
	for i in "${rest[@]}"; do qop_before+=("$(grep -c '"sasl_qop":"auth-int"' "$KS/sidecar$i.log" || true)"); done
	stop_hms "$KS/hms" || { fail "$L expiry: metastore did not stop cleanly"; return; }
	# It comes back offering only the integrity layer (hadoop.rpc.protection=integrity): the
	# sidecars' new connections negotiate QOP auth-int, wrapping every frame.
	HMS_JAVA_OPTS+=(-Drealhms.krb.qop=integrity)
	CLIENT_JAVA_OPTS+=(-Drealhms.krb.qop=integrity)
	start_hms "$KS/hms" json --port "$hms_port" || { fail "$L expiry: metastore did not start again"; return; }
	java_main Workload --uri "$HMS_URI" --prefix kexp --expected "$KS/kexp.jsonl" --warehouse "file:$KS/hms/db/warehouse" >"$KS/kexp.out" 2>&1 ||
		{ fail "$L expiry: workload failed"; return; }
	if java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${KFE_ADDR[${rest[0]}]}" "${KFE_ADDR[${rest[1]}]}")" --timeout 120 >"$KS/kexp.cmp"; then
		# Each sidecar logs the QOP of every connection it makes: the ones after the restart
		# must be auth-int.
		local j=0 n
		for i in "${rest[@]}"; do
			n=$(grep -c '"sasl_qop":"auth-int"' "$KS/sidecar$i.log" || true)
			if [ "$n" -le "${qop_before[$j]}" ]; then
				fail "$L expiry: k$i converged but logged no connection with sasl_qop auth-int after the metastore came back with hadoop.rpc.protection=integrity"
				return
			fi
			j=$((j + 1))
		done
		pass "$L expiry: $((SECONDS - t_login))s after the sidecars first logged in (tickets live ${KRB_LIFE}s, all expired) they reconnected to the restarted metastore with fresh tickets, now with QOP auth-int (hadoop.rpc.protection=integrity), and converged"
	else
		fail "$L expiry: no convergence after the tickets expired and the metastore restarted"
		cat "$KS/kexp.cmp"
	fi
	stop_hms "$KS/hms" || true
	kdc_stop
}

kerberos_config() { # file principal keytab [cluster]
	cat >"$1" <<-EOF
		cluster: ${4:-realhms-kerberos}
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
		    hms_auth:
		      mechanism: kerberos
		      service_principal: "hive/_HOST@$REALM"
		      client_principal: "$2"
		      keytab: "$3"
		      krb5_conf: "$KRB5_CONF"
		retry:
		  initial: 100ms
		  max: 2s
		  auth_interval: 2s
		log:
		  level: info
		  format: json
		shutdown_timeout: 5s
	EOF
}

kerberos_sidecar() { # i config
	local i=$1
	start_bg "$KS/sidecar$i.log" "$HMSSYNC" run --config "$2" --member "k$i" \
		--etcd-endpoints "http://$ETCD_ADDR" --fe-url "http://${KFE_ADDR[$i]}" --fe-dialect native \
		--http-listen "${KSC_ADDR[$i]}"
	KSC_PID[$i]=$LAST_PID
	wait_port "${KSC_ADDR[$i]}" 60
}

# etcd_kv OP KEY [VALUE]: put or delete KEY through etcd's JSON gateway (no etcdctl needed).
etcd_kv() {
	local body="{\"key\":\"$(printf %s "$2" | base64 -w0)\""
	[ $# -gt 2 ] && body="$body,\"value\":\"$(printf %s "$3" | base64 -w0)\""
	curl -sf -X POST "http://$ETCD_ADDR/v3/kv/$1" -d "$body}" >/dev/null
}

# catalog_field ADDR FIELD: FIELD of the first catalog in a sidecar's /status (numbers, booleans).
catalog_field() {
	# /status is indented JSON: squeezed onto one line first (the fields read here hold no spaces).
	# || true: a sidecar not answering yet reads as empty, not as a pipeline failure that set -e
	# (and pipefail) would turn into the end of the suite.
	curl -s "http://$1/status" 2>/dev/null | tr -d ' \t\n' | sed 's/.*"catalogs":\[//' | grep -o "\"$2\":[^,}]*" | head -1 | cut -d: -f2 || true
}

# kerberos_backlog_check LABEL: run by kerberos_checks_in with the KDC up and the sidecars
# ${rest[@]} (one of them master) synced. Their logins and connections were made with the KDC
# up; whether a sidecar needs to reconnect while it is down (the Go test TestKDCDownWhileSyncing
# forces that; nothing here can cut a connection to Hive, and Hive cannot restart without the
# KDC) is reported, not forced.
kerberos_backlog_check() {
	local L=$1 t0=$SECONDS key="/hmssync/realhms-kerberos/pause" i mi master fr_before fr_after out target conns_before conns_after
	fr_before=$(java_main SidecarProbe full-refreshes --http "$(urls "${KSC_ADDR[${rest[0]}]}" "${KSC_ADDR[${rest[1]}]}")" --each true)
	mi=$(java_main SidecarProbe master --http "$(urls "${KSC_ADDR[${rest[0]}]}" "${KSC_ADDR[${rest[1]}]}")") ||
		{ fail "$L kdc down, backlog: no master: $mi"; return 1; }
	master=${rest[$mi]}
	etcd_kv put "$key" "realhms kerberos backlog" || { fail "$L kdc down, backlog: could not put the pause key"; return 1; }
	local deadline=$((SECONDS + 30))
	until [ "$(catalog_field "${KSC_ADDR[$master]}" paused)" = true ]; do
		[ $SECONDS -ge $deadline ] && { fail "$L kdc down, backlog: master k$master did not hold for the pause key within 30s"; return 1; }
		sleep 0.2
	done
	java_main Workload --uri "$HMS_URI" --prefix kback --expected "$KS/kback.jsonl" --warehouse "file:$KS/hms/db/warehouse" >"$KS/kback.out" 2>&1 ||
		{ fail "$L kdc down, backlog: workload failed: $(grep -m1 Exception "$KS/kback.out")"; return 1; }
	target=$(grep -o 'to_event_id=[0-9]*' "$KS/kback.out" | cut -d= -f2)
	[ -n "$target" ] || { fail "$L kdc down, backlog: the workload printed no to_event_id"; return 1; }
	local held
	held=$(catalog_field "${KSC_ADDR[$master]}" cursor)
	if [ "${held:-0}" -ge "$target" ]; then
		fail "$L kdc down, backlog: master k$master at $held, already past the backlog's end $target while paused"
		return 1
	fi
	kdc_stop
	conns_before=$(cat "$KS/sidecar${rest[0]}.log" "$KS/sidecar${rest[1]}.log" | grep -c '"connected to metastore"' || true)
	etcd_kv deleterange "$key" || { fail "$L kdc down, backlog: could not delete the pause key"; kdc_resume; return 1; }
	# Drained: with the KDC down, SidecarProbe converge (a Hive client, which must log in) cannot
	# read the truth; each sidecar's cursor reaching the workload's last event stands for it.
	deadline=$((SECONDS + 60))
	for i in "${rest[@]}"; do
		until [ "$(catalog_field "${KSC_ADDR[$i]}" cursor)" -ge "$target" ] 2>/dev/null; do
			if [ $SECONDS -ge $deadline ]; then
				fail "$L kdc down, backlog: k$i did not drain the backlog (to event $target) with the KDC stopped within 60s: cursor $(catalog_field "${KSC_ADDR[$i]}" cursor), last error: $(curl -s "http://${KSC_ADDR[$i]}/status" | grep -o '"last_error": *"[^"]*' | head -1)"
				kdc_resume
				return 1
			fi
			sleep 0.2
		done
	done
	conns_after=$(cat "$KS/sidecar${rest[0]}.log" "$KS/sidecar${rest[1]}.log" | grep -c '"connected to metastore"' || true)
	kdc_resume || { fail "$L kdc down, backlog: the KDC did not start again"; return 1; }
	if ! java_main SidecarProbe converge --hms "$HMS_URI" --fe "$(urls "${KFE_ADDR[${rest[0]}]}" "${KFE_ADDR[${rest[1]}]}")" --timeout 120 >"$KS/kback.cmp"; then
		fail "$L kdc down, backlog: drained, but no convergence with what the Hive client lists"
		cat "$KS/kback.cmp"
		return 1
	fi
	fr_after=$(java_main SidecarProbe full-refreshes --http "$(urls "${KSC_ADDR[${rest[0]}]}" "${KSC_ADDR[${rest[1]}]}")" --each true)
	if [ "$fr_after" != "$fr_before" ]; then
		fail "$L kdc down, backlog: full refreshes per sidecar went from $fr_before to $fr_after, want none"
		return 1
	fi
	pass "$L kdc down, backlog: with the KDC stopped, k${rest[0]} and k${rest[1]} (master k$master) drained a backlog from event $held to $target ($((conns_after - conns_before)) new metastore connections meanwhile), converged once it was back, no full refresh (the check took $((SECONDS - t0))s)"
}
