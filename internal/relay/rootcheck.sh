# sluice_root_check ROOT UID tells whether ROOT, the node's directory of
# socket directories, is safe for the socket directory of user UID: it
# prints why not, naming the path and its owner, and returns 1 when it is
# not. Whoever may rename an entry of a directory on the way to a socket
# directory can move it away and put one of their own in its place, or take
# the relay's address once it is gone; so, as OpenSSH's StrictModes asks of
# the files it trusts:
#
#   - every directory from / down to ROOT, both as ROOT names it and as it
#     resolves (cd -P), is owned by root (uid 0) or by UID: the owner of a
#     directory may rename anything in it, whatever its mode;
#   - none of them is writable by its group or by others, unless it has the
#     sticky bit, as /tmp has: then the others may add entries but not
#     rename or remove those of UID (a sticky directory of root's, or of
#     UID's own, as the job or the tunnel makes a missing ROOT);
#   - every symbolic link met on the way is owned by root or by UID (a link
#     cannot be changed, only replaced, which its directory's rule covers).
#
# The links inside a link's target are trusted as they resolve now.
# shellcheck disable=SC2012 # one path at a time, numeric owner
sluice_root_check() {
	sluice_rc_path=$1
	while :; do
		sluice_root_check_entry "$sluice_rc_path" "$2" || return 1
		[ "$sluice_rc_path" = / ] && break
		sluice_rc_path=${sluice_rc_path%/*}
		sluice_rc_path=${sluice_rc_path:-/}
	done
	if ! sluice_rc_path=$(cd -P -- "$1" 2>/dev/null && pwd -P); then
		echo "$1 cannot be resolved"
		return 1
	fi
	while :; do
		sluice_root_check_entry "$sluice_rc_path" "$2" || return 1
		[ "$sluice_rc_path" = / ] && break
		sluice_rc_path=${sluice_rc_path%/*}
		sluice_rc_path=${sluice_rc_path:-/}
	done
}

# sluice_root_check_entry PATH UID checks one entry on the way (see
# sluice_root_check): a link, then the directory it resolves to, or a
# directory.
# shellcheck disable=SC2012 # one path at a time, numeric owner
sluice_root_check_entry() {
	sluice_rc_ls=$(ls -ldn -- "$1" 2>/dev/null | awk '{ print $1, $3 }')
	case $sluice_rc_ls in
	l*)
		sluice_root_check_owner "$1" "${sluice_rc_ls#* }" "$2" "the symbolic link" || return 1
		sluice_rc_ls=$(ls -ldn -- "$1/." 2>/dev/null | awk '{ print $1, $3 }')
		;;
	esac
	case $sluice_rc_ls in
	d*) ;;
	*)
		echo "$1 is not a directory"
		return 1
		;;
	esac
	sluice_root_check_owner "$1" "${sluice_rc_ls#* }" "$2" "the directory" || return 1
	case ${sluice_rc_ls%% *} in
	?????????[tT]*) ;;
	?????w* | ????????w*)
		echo "$1 is writable by others (${sluice_rc_ls%% *}) and not sticky: any of them could rename what it holds"
		return 1
		;;
	esac
}

# sluice_root_check_owner PATH OWNER UID WHAT fails unless OWNER is 0 or UID.
# shellcheck disable=SC2012 # one path, for the owner's name
sluice_root_check_owner() {
	if [ "$2" = 0 ] || [ "$2" = "$3" ]; then
		return 0
	fi
	echo "$4 $1 is owned by uid $2 ($(ls -ld -- "$1" 2>/dev/null | awk '{ print $3 }')), not by root or uid $3: its owner could rename what it holds"
	return 1
}
