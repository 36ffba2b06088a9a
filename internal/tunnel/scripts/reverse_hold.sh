# sluice reverse tunnel: hold the session while the socket directory (the
# same one, by inode) and every socket of the tunnel exist (SPEC S5). It
# writes a line every second, so that it also ends on the node, killed by
# SIGPIPE, once the connection is gone.
#
# Run as: sh -c SCRIPT sluice-reverse DIR INODE SOCKET...
# Prints "held" each second while held, then "ended <reason>".
dir=$1
inode=$2
shift 2
reason=
held() {
	if [ ! -d "$dir" ]; then
		reason="socket directory removed"
		return 1
	fi
	# Only the inode is read from ls: the name does not matter.
	# shellcheck disable=SC2012
	if ! ls -di -- "$dir" 2>/dev/null | { read -r i _ && [ "$i" = "$inode" ]; }; then
		reason="socket directory replaced"
		return 1
	fi
	for s in "$@"; do
		if [ ! -S "$dir/$s" ]; then
			reason="socket $s removed"
			return 1
		fi
	done
}
while held "$@"; do
	echo held
	sleep 1
done
echo "ended $reason"
