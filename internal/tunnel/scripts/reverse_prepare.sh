# sluice reverse tunnel: make the socket directory (SPEC S5) if it is
# missing, owner-only, and describe it for the tunnel to check. Its root
# must be safe first (sluice_root_check, defined before this script): a root
# another user could change would let them move the directory away.
#
# Run as: sh -c SCRIPT sluice-reverse DIR
# Prints "uid <the session's uid>" and "dir <ls -ldin DIR>".
set -eu
root=$(dirname -- "$1")
if [ ! -e "$root" ]; then
	# The root is every user's, as /tmp is, and as the job makes it when
	# it comes first: sticky and open to all (a site should make it so,
	# owned by root).
	mkdir -p -- "$root"
	chmod 1777 -- "$root"
fi
if ! why=$(sluice_root_check "$root" "$(id -u)"); then
	echo "socket directory root $root is not safe: $why" >&2
	exit 1
fi
umask 077
mkdir -m 700 -- "$1" 2>/dev/null || [ -d "$1" ]
printf 'uid %s\n' "$(id -u)"
printf 'dir %s\n' "$(ls -ldin -- "$1")"
