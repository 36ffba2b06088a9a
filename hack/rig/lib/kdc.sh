#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# Kerberos: an MIT KDC for the rig's own realm, in the login namespace (port
# 88 on its addresses: the host reaches it at LOGIN_ADDR, the compute node
# at LOGIN_NODE_SIDE_ADDR). Host principals for both sshds in
# /etc/krb5.keytab (the namespaces share the filesystem, so both sshds read
# it), /etc/krb5.conf, and a principal and keytab for alice.
set -euo pipefail

KDC_REALM=SLUICE.RIG
KDC_DIR="${RIG_DIR}/krb5"
KDC_PROFILE="${RIG_CONF_DIR}/kdc.conf"
KDC_KRB5_CONF="${RIG_CONF_DIR}/krb5.conf"
KDC_HOST_KEYTAB=/etc/krb5.keytab
KDC_CONF_CHANGED=1

# kdc_user_keytab USER: the root-readable keytab of USER's principal.
kdc_user_keytab() { printf '%s/%s.keytab' "${RIG_KEY_DIR}" "$1"; }
kdc_user_principal() { printf '%s@%s' "$1" "${KDC_REALM}"; }

# kdc_host_principals: what the sshds accept (GSSAPIStrictAcceptorCheck no
# takes any key of the keytab); clients ask for host/<the name they dial>.
kdc_host_principals() {
	local name
	for name in "${LOGIN_ADDR}" login "${NODE_ADDR}" "${NODE_NAME}"; do
		printf 'host/%s@%s\n' "${name}" "${KDC_REALM}"
	done
}

kdc_env() {
	env KRB5_CONFIG="${KDC_KRB5_CONF}" KRB5_KDC_PROFILE="${KDC_PROFILE}" "$@"
}

kadmin_q() {
	kdc_env kadmin.local -r "${KDC_REALM}" -q "$1" >>"${RIG_LOG_DIR}/kdc.log" 2>&1
}

kdc_has_principal() {
	local out
	out="$(kdc_env kadmin.local -r "${KDC_REALM}" -q "getprinc $1" 2>&1)" || return 1
	[[ "${out}" == *"Principal: $1"* ]]
}

# kdc_keytab FILE PRINCIPAL...: FILE holds the current keys of the
# principals (exported without new keys, so that running it again changes
# nothing), replaced atomically.
kdc_keytab() {
	local file="$1" princ
	shift
	rm -f "${file}.tmp"
	for princ in "$@"; do
		kadmin_q "ktadd -k ${file}.tmp -norandkey ${princ}" || die "kdc: ktadd ${princ} failed (see ${RIG_LOG_DIR}/kdc.log)"
	done
	chmod 0600 "${file}.tmp"
	mv -f "${file}.tmp" "${file}"
}

# kdc_prepare renders the configs, creates the database and principals when
# missing, and writes the keytabs. KDC_CONF_CHANGED is 0 when kdc.conf
# changed.
kdc_prepare() {
	install -d -m 0700 "${KDC_DIR}"
	KDC_CONF_CHANGED=1
	if render "${RIG_SRC_DIR}/conf/kdc.conf.in" "${KDC_PROFILE}" 0644 \
		REALM="${KDC_REALM}" DB="${KDC_DIR}/principal" STASH="${KDC_DIR}/stash" ACL="${KDC_DIR}/kadm5.acl"; then
		KDC_CONF_CHANGED=0
	fi
	render "${RIG_SRC_DIR}/conf/krb5.conf.in" "${KDC_KRB5_CONF}" 0644 \
		REALM="${KDC_REALM}" KDC_LOGIN="${LOGIN_ADDR}:88" KDC_NODE="${LOGIN_NODE_SIDE_ADDR}:88" \
		LOGIN_ADDR="${LOGIN_ADDR}" NODE_ADDR="${NODE_ADDR}" NODE_NAME="${NODE_NAME}" || true
	ln -sfn "${KDC_KRB5_CONF}" /etc/krb5.conf
	[[ -f "${KDC_DIR}/kadm5.acl" ]] || install -m 0600 /dev/null "${KDC_DIR}/kadm5.acl"
	if [[ ! -f "${KDC_DIR}/stash" ]]; then
		log "kdc: creating realm ${KDC_REALM}"
		rm -f "${KDC_DIR}"/principal*
		kdc_env kdb5_util -r "${KDC_REALM}" create -s -P "$(head -c 24 /dev/urandom | base64)" \
			>>"${RIG_LOG_DIR}/kdc.log" 2>&1 || die "kdc: kdb5_util create failed (see ${RIG_LOG_DIR}/kdc.log)"
	fi
	local princ hosts=() user
	mapfile -t hosts < <(kdc_host_principals)
	for princ in "${hosts[@]}" "$(kdc_user_principal "${RIG_USER}")" "$(kdc_user_principal "${RIG_OTHER_USER}")"; do
		kdc_has_principal "${princ}" || kadmin_q "addprinc -randkey ${princ}" || die "kdc: addprinc ${princ} failed"
	done
	kdc_keytab "${KDC_HOST_KEYTAB}" "${hosts[@]}"
	for user in "${RIG_USER}" "${RIG_OTHER_USER}"; do
		kdc_keytab "$(kdc_user_keytab "${user}")" "$(kdc_user_principal "${user}")"
	done
}

kdc_start() {
	kdc_prepare
	spawn kdc krb5kdc ip netns exec "${NS_LOGIN}" \
		env KRB5_CONFIG="${KDC_KRB5_CONF}" KRB5_KDC_PROFILE="${KDC_PROFILE}" /usr/sbin/krb5kdc -n
	wait_until 15 "the KDC to answer" kdc_answers || { tail_log kdc; die "the KDC does not answer"; }
	# a KDC started alone on a rig that is up: rig.env gains the realm
	if [[ -f "${RIG_DIR}/rig.env" ]]; then
		env_write
	fi
}

# kdc_kinit_in NETNS|"": alice gets a ticket from her keytab, from the host
# or from a namespace, into a ccache that is thrown away.
kdc_kinit_in() {
	local ns="$1" kinit_cmd
	kinit_cmd=(env KRB5_CONFIG="${KDC_KRB5_CONF}" KRB5CCNAME="MEMORY:rig" kinit -k -t "$(kdc_user_keytab "${RIG_USER}")" "$(kdc_user_principal "${RIG_USER}")")
	if [[ -z "${ns}" ]]; then
		"${kinit_cmd[@]}"
	else
		nsenter --net="/run/netns/${ns}" -- "${kinit_cmd[@]}"
	fi
}

# kdc_answers: the KDC gives alice a ticket from the host and from the node.
kdc_answers() {
	kdc_kinit_in "" && kdc_kinit_in "${NS_NODE}"
}

# kdc_restart_changed stops a running KDC whose kdc.conf changed;
# services_up starts it again.
kdc_restart_changed() {
	kdc_prepare
	((KDC_CONF_CHANGED == 0)) || return 0
	service_pid kdc >/dev/null || return 0
	log "kdc: kdc.conf changed"
	service_stop kdc
}
