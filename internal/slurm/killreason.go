package slurm

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KillReason says what killed a container that ran again.
type KillReason string

// The kill reasons a restarts file (RestartsFile) may hold.
const (
	KilledByLiveness  KillReason = "liveness"  // its liveness probe failed
	KilledByStartup   KillReason = "startup"   // its startup probe failed
	KilledByPostStart KillReason = "postStart" // its postStart hook failed
)

// Termination is how a container's last killed run ended.
type Termination struct {
	ExitCode              int
	StartedAt, FinishedAt time.Time // zero when the node's clock was not read
	Reason                KillReason
}

// A container's restarts file holds one line, "<count> <code> <start>
// <end> <reason>": how often the container was killed (by its liveness or
// startup probe, or its postStart hook) and run again, and the exit code,
// times (seconds since the epoch, 0 for unknown) and reason of its last
// killed run. The job writes it, so it is read as hostile: at most 64
// bytes (maxExitFile), one line that restartsGrep matches, each field
// within bounds.
const restartsGrep = `grep -D skip -s -H -m 1 -x -E '[0-9]{1,6} [0-9]{1,3} ([0-9]{10,11}|0) ([0-9]{10,11}|0) [a-zA-Z]{1,16}' -- "$@"; [ "$?" -le 2 ]`

// killedGrep prints, for each killed file (KilledFile) it is given,
// "<file>:<reason>" for its first line that is a word, read with the care
// of exitGrep.
const killedGrep = `grep -D skip -s -H -m 1 -x -E '[a-zA-Z]{1,16}' -- "$@"; [ "$?" -le 2 ]`

// parseKillReason parses the content of a killed file.
func parseKillReason(s string) (KillReason, error) {
	switch r := KillReason(s); r {
	case KilledByLiveness, KilledByStartup, KilledByPostStart:
		return r, nil
	}
	return "", fmt.Errorf("unknown reason %q", s)
}

// maxRestarts bounds a restart count: six digits.
const maxRestarts = 999999

// parseRestarts parses the content of a restarts file as restartsGrep
// prints it.
func parseRestarts(s string) (int, Termination, error) {
	f := strings.Split(s, " ")
	if len(f) != 5 {
		return 0, Termination{}, fmt.Errorf("%d fields; want 5", len(f))
	}
	n, err := strconv.Atoi(f[0])
	if !isDigits(f[0]) || len(f[0]) > 6 || f[0][0] == '0' || err != nil || n > maxRestarts {
		return 0, Termination{}, fmt.Errorf("count %q out of range", f[0])
	}
	code, err := parseSmall(f[1], 255)
	if err != nil {
		return 0, Termination{}, fmt.Errorf("exit code %q out of range", f[1])
	}
	reason, err := parseKillReason(f[4])
	if err != nil {
		return 0, Termination{}, err
	}
	t := Termination{ExitCode: code, Reason: reason}
	if f[2] != "0" || f[3] != "0" {
		times, err := parseTimes(f[2] + " " + f[3])
		if err != nil {
			return 0, Termination{}, err
		}
		t.StartedAt, t.FinishedAt = times.start, times.end
	}
	return n, t, nil
}
