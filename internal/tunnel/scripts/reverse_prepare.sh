# sluice reverse tunnel: make the socket directory (SPEC S5) if it is
# missing, owner-only, and describe it for the tunnel to check.
#
# Run as: sh -c SCRIPT sluice-reverse DIR
# Prints "uid <the session's uid>" and "dir <ls -ldin DIR>".
set -eu
umask 077
# Under umask 077 the parents made are owner-only too.
# shellcheck disable=SC2174
mkdir -p -m 700 -- "$1"
printf 'uid %s\n' "$(id -u)"
printf 'dir %s\n' "$(ls -ldin -- "$1")"
