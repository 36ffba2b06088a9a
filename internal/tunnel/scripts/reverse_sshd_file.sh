# sluice reverse tunnel: write one file of a user-space sshd (SPEC S5) into
# the socket directory, owner-only: its host key or authorized key. They go
# with the directory.
#
# Run as: sh -c SCRIPT sluice-reverse DIR INODE NAME, the content on stdin.
set -eu
dir=$1
inode=$2
name=$3
case $name in
sshd-forwards-host_key | sshd-forwards-authorized_keys) ;;
sshd-socks-host_key | sshd-socks-authorized_keys) ;;
*)
	echo "not a file of the user-space sshd: $name" >&2
	exit 1
	;;
esac
# Only the inode is read from ls: the name does not matter.
# shellcheck disable=SC2012
if ! ls -di -- "$dir" 2>/dev/null | { read -r i _ && [ "$i" = "$inode" ]; }; then
	echo "socket directory replaced" >&2
	exit 1
fi
umask 077
rm -f -- "$dir/$name"
cat >"$dir/$name"
