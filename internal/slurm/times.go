package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A container's time file (TimeFile) holds, on one line, the time it
// started and, once it ended, the time it ended: seconds since the epoch,
// as the node's clock (date +%s) told them, separated by a space. The job
// writes it, so it is read as hostile: at most 64 bytes (maxExitFile), one
// line of one or two numbers of 10 or 11 digits (timeGrep), none before
// minNodeTime, the end not before the start. Eleven digits end in year
// 5138, well before year 9999, past which an API object's time cannot be
// written.

// runTimes are the times a container's time file gives; zero for none.
type runTimes struct {
	start, end time.Time
}

// minNodeTime is the earliest time a time file may hold: 10 digits.
var minNodeTime = time.Unix(1e9, 0) // 2001-09-09

// parseTimes parses the content of a time file as timeGrep prints it:
// "<start>" or "<start> <end>".
func parseTimes(s string) (runTimes, error) {
	startField, endField, hasEnd := strings.Cut(s, " ")
	start, err := parseNodeTime(startField)
	if err != nil {
		return runTimes{}, fmt.Errorf("start time: %w", err)
	}
	t := runTimes{start: start}
	if !hasEnd {
		return t, nil
	}
	if t.end, err = parseNodeTime(endField); err != nil {
		return runTimes{}, fmt.Errorf("end time: %w", err)
	}
	if t.end.Before(t.start) {
		return runTimes{}, fmt.Errorf("end time %s before start time %s", endField, startField)
	}
	return t, nil
}

// parseNodeTime parses seconds since the epoch: digits only, no sign.
func parseNodeTime(s string) (time.Time, error) {
	if len(s) < 10 || len(s) > 11 || strings.Trim(s, "0123456789") != "" {
		return time.Time{}, fmt.Errorf("%q is not 10 or 11 digits", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, errors.New("time out of range")
	}
	t := time.Unix(n, 0).UTC()
	if t.Before(minNodeTime) {
		return time.Time{}, fmt.Errorf("time %s out of range", s)
	}
	return t, nil
}
