# shellcheck shell=bash
# Sourced by the real-metastore suite: a throwaway MIT Kerberos KDC on loopback (Debian's
# krb5-kdc and krb5-admin-server), the same setup as the Go tests' internal/testutil/kdctest: a fresh
# realm in a directory, principals with random keys, keytabs exported without changing them.
#   kdc_start DIR PORT MAX_LIFE_SECONDS   makes the realm and starts krb5kdc (sets KDC_DIR,
#                                         KDC_PID, KRB5_CONF, REALM)
#   kdc_addprinc NAME                     a principal with a random key
#   kdc_keytab NAME FILE                  exports NAME's current keys into FILE
#   kdc_rotate NAME                       new random keys (older keytabs go stale)
#   kdc_delprinc NAME
#   kdc_stop / kdc_resume                 stop krb5kdc / start it again on the same port

REALM=HMSSYNC.TEST
KDC_SBIN=/usr/sbin

kdc_available() {
	[ -x "$KDC_SBIN/krb5kdc" ] && [ -x "$KDC_SBIN/kdb5_util" ] && [ -x "$KDC_SBIN/kadmin.local" ]
}

kdc_env() { env KRB5_CONFIG="$KRB5_CONF" KRB5_KDC_PROFILE="$KDC_DIR/kdc.conf" "$@"; }

kdc_start() { # dir port max_life
	KDC_DIR=$1
	KDC_ADDR="127.0.0.1:$2"
	local life=$3
	mkdir -p "$KDC_DIR"
	KRB5_CONF="$KDC_DIR/krb5.conf"
	cat >"$KDC_DIR/kdc.conf" <<-EOF
		[kdcdefaults]
		 kdc_listen = $KDC_ADDR
		 kdc_tcp_listen = $KDC_ADDR
		[realms]
		 $REALM = {
		  database_name = $KDC_DIR/principal
		  key_stash_file = $KDC_DIR/stash
		  acl_file = $KDC_DIR/kadm5.acl
		  max_life = ${life}s
		  max_renewable_life = ${life}s
		  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
		 }
		[logging]
		 kdc = FILE:$KDC_DIR/kdc.log
	EOF
	: >"$KDC_DIR/kadm5.acl"
	# rdns and dns_canonicalize_hostname off: Java would otherwise turn 127.0.0.1 or localhost
	# into another name before asking for hive/<host>.
	cat >"$KRB5_CONF" <<-EOF
		[libdefaults]
		 default_realm = $REALM
		 dns_lookup_kdc = false
		 dns_lookup_realm = false
		 rdns = false
		 dns_canonicalize_hostname = false
		 udp_preference_limit = 1
		 ticket_lifetime = ${life}s
		 renew_lifetime = ${life}s
		 default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
		 default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
		 permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
		[realms]
		 $REALM = {
		  kdc = $KDC_ADDR
		 }
		[domain_realm]
		 localhost = $REALM
		 127.0.0.1 = $REALM
	EOF
	kdc_env "$KDC_SBIN/kdb5_util" -r "$REALM" create -s -P realhms-master-password >"$KDC_DIR/create.log" 2>&1 || {
		cat "$KDC_DIR/create.log"
		return 1
	}
	kdc_resume
}

kdc_resume() {
	# env execs krb5kdc, so $! is the KDC itself (a backgrounded function would be a subshell).
	env KRB5_CONFIG="$KRB5_CONF" KRB5_KDC_PROFILE="$KDC_DIR/kdc.conf" "$KDC_SBIN/krb5kdc" -n -r "$REALM" >>"$KDC_DIR/krb5kdc.out" 2>&1 &
	KDC_PID=$!
	STARTED_PIDS+=("$KDC_PID")
	local deadline=$((SECONDS + 20))
	until (exec 3<>"/dev/tcp/${KDC_ADDR%:*}/${KDC_ADDR#*:}") 2>/dev/null; do
		kill -0 "$KDC_PID" 2>/dev/null || { cat "$KDC_DIR/krb5kdc.out"; return 1; }
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.2
	done
}

kdc_stop() {
	kill "$KDC_PID" 2>/dev/null || true
	wait "$KDC_PID" 2>/dev/null || true
}

kdc_admin() { # query
	local out
	out=$(kdc_env "$KDC_SBIN/kadmin.local" -r "$REALM" -q "$1" 2>&1) || { echo "$out"; return 1; }
	if grep -q "rror" <<<"$out"; then echo "$out"; return 1; fi
}

kdc_addprinc() { kdc_admin "addprinc -randkey $1"; }
kdc_keytab() { kdc_admin "ktadd -k $2 -norandkey $1"; }
kdc_rotate() { kdc_admin "cpw -randkey $1"; }
kdc_delprinc() { kdc_admin "delprinc -force $1"; }
