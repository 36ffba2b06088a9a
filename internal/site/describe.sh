# What the node reports of the site (SPEC S11), read once at start: one
# "key=value" line each, every value the first line of its command's output,
# at most 200 bytes. $1 is the container runtime's program ("" for none).
first() {
	command -v "$1" >/dev/null 2>&1 || { echo; return; }
	"$@" </dev/null 2>&1 | head -n 1 | head -c 200
	echo
}
printf 'slurm='
first sinfo --version
printf 'runtime='
if [ -n "$1" ]; then first "$1" --version; else echo; fi
printf 'kernel='
first uname -r
printf 'arch='
first uname -m
printf 'os='
for f in /etc/os-release /usr/lib/os-release; do
	if [ -r "$f" ]; then
		grep -m 1 '^PRETTY_NAME=' "$f" | head -c 200
		break
	fi
done
echo
