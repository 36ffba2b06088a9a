# sluice reverse tunnel: remove the sockets an earlier session left in the
# socket directory, which the node's sshd will not bind over
# (StreamLocalBindUnlink no). Only the names given are touched, and only
# when they are sockets.
#
# Run as: sh -c SCRIPT sluice-reverse DIR INODE SOCKET...
# where INODE is the directory's inode as the tunnel checked it.
set -eu
dir=$1
inode=$2
shift 2
# Only the inode is read from ls: the name does not matter.
# shellcheck disable=SC2012
if ! ls -di -- "$dir" | { read -r i _ && [ "$i" = "$inode" ]; }; then
	echo "socket directory $dir was replaced" >&2
	exit 1
fi
for s in "$@"; do
	if [ -S "$dir/$s" ]; then
		rm -f -- "$dir/$s"
	elif [ -e "$dir/$s" ] || [ -h "$dir/$s" ]; then
		echo "$dir/$s is not a socket: not removed" >&2
		exit 1
	fi
done
