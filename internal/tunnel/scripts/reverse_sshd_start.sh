# sluice reverse tunnel: start the user-space sshd (SPEC S5) in inetd mode on
# the session's standard input and output, with its whole configuration in
# -o options: no configuration file, so nothing at a path of the socket
# directory can decide what it runs or allows. It reads two files there,
# its host key and the authorized key, whose directory is checked first, in
# this shell, right before the exec: the root and every directory above it
# (sluice_root_check, defined before this script) and the directory's
# inode. Nobody but root and the user can swap them after that, and a swap
# could only fail the session: the host key is pinned by the tunnel, and
# the authorized key admits the tunnel's own key alone.
#
# Run as: sh -c SCRIPT sluice-reverse DIR INODE SSHD OPTION...
# where OPTION... are the sshd's arguments after -f /dev/null (-o pairs).
set -eu
dir=$1
inode=$2
sshd=$3
shift 3
root=$(dirname -- "$dir")
if ! why=$(sluice_root_check "$root" "$(id -u)"); then
	echo "socket directory root $root is not safe: $why" >&2
	exit 1
fi
# Only the inode is read from ls: the name does not matter.
# shellcheck disable=SC2012
if ! ls -di -- "$dir" 2>/dev/null | { read -r i _ && [ "$i" = "$inode" ]; }; then
	echo "socket directory $dir was replaced" >&2
	exit 1
fi
exec "$sshd" -i -e -f /dev/null "$@"
