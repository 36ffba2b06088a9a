package slurm

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// queueFields are the squeue -o fields: job ID, state, reason, batch host,
// start and end time, and the job name, the one field a user fills freely.
// They are separated and ended by the separator of the call (see
// splitRecords), so that no name can pass for another job's line.
var queueFields = []string{"%i", "%T", "%r", "%B", "%S", "%e", "%j"}

// timeEnv makes squeue and sacct print times as Unix seconds, whatever the
// site's time zone.
var timeEnv = []string{"env", "SLURM_TIME_FORMAT=%s"}

// squeueCmd is the squeue command line for all jobs of the user, in any
// state (finished ones stay for MinJobAge), in records ended by sep, with
// extra selection flags.
func squeueCmd(sep string, extra ...string) []string {
	format := strings.Join(queueFields, sep) + sep
	args := append(append([]string{}, timeEnv...), "squeue", "--me", "-h", "-t", "all", "-o", format)
	return append(args, extra...)
}

// queueEntry is one record of squeue output. Host is as Slurm printed it and
// is validated before it is passed on.
type queueEntry struct {
	ID     string
	State  State
	Reason string
	Host   string
	Start  time.Time
	End    time.Time
	Name   string
}

var (
	// anyJobID matches the IDs squeue and sacct print: plain jobs, array
	// elements and pending arrays ("123_4", "123_[1-5%2]") and components
	// of heterogeneous jobs ("123+1").
	anyJobID = regexp.MustCompile(`^[0-9]{1,10}([_+][0-9\[\]%,-]{1,64})?$`)
	// reasonText matches Slurm's reason words ("Resources", "None",
	// "ReqNodeNotAvail, UnavailableNodes:n1").
	reasonText = regexp.MustCompile(`^[A-Za-z0-9_ ,:.()\[\]*/=-]{0,256}$`)
)

// parseQueueRecord parses the fields of one squeue record.
func parseQueueRecord(f []string) (queueEntry, error) {
	if len(f) != len(queueFields) {
		return queueEntry{}, fmt.Errorf("squeue: malformed record %q", strings.Join(f, "|"))
	}
	e := queueEntry{ID: f[0], Host: f[3], Name: f[6]}
	if !anyJobID.MatchString(e.ID) {
		return queueEntry{}, fmt.Errorf("squeue: malformed job id in %q", strings.Join(f, "|"))
	}
	var err error
	if e.State, err = ParseState(f[1]); err != nil {
		return queueEntry{}, fmt.Errorf("squeue: %w", err)
	}
	if e.Reason, err = parseReason(f[2]); err != nil {
		return queueEntry{}, fmt.Errorf("squeue: %w", err)
	}
	if e.Start, err = parseTime(f[4]); err != nil {
		return queueEntry{}, fmt.Errorf("squeue: %w", err)
	}
	if e.End, err = parseTime(f[5]); err != nil {
		return queueEntry{}, fmt.Errorf("squeue: %w", err)
	}
	return e, nil
}

// parseQueue parses squeue output in records ended by sep. Malformed
// records, and every record of a job ID listed more than once, are left out
// and reported together in err; the other entries are returned all the same.
func parseQueue(out []byte, sep string) ([]queueEntry, error) {
	records, errs := splitRecords(out, sep, len(queueFields))
	for i := range errs {
		errs[i] = fmt.Errorf("squeue: %w", errs[i])
	}
	var entries []queueEntry
	for _, f := range records {
		if strings.Contains(strings.Join(f[:len(f)-1], ""), "\n") { // only the name, last, may
			errs = append(errs, fmt.Errorf("squeue: newline in a field of %q", strings.Join(f, "|")))
			continue
		}
		e, err := parseQueueRecord(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		entries = append(entries, e)
	}
	entries, repeated := dropRepeated(entries, func(e queueEntry) string { return e.ID })
	for _, err := range repeated {
		errs = append(errs, fmt.Errorf("squeue: %w", err))
	}
	return entries, errors.Join(errs...)
}

// parseReason turns Slurm's reason into ours: "None" is no reason.
func parseReason(s string) (string, error) {
	if !reasonText.MatchString(s) {
		return "", fmt.Errorf("slurm: malformed reason %q", s)
	}
	if s == "None" || s == "(null)" {
		return "", nil
	}
	return s, nil
}

// parseTime parses a time printed under SLURM_TIME_FORMAT=%s. Slurm's words
// for "no time" give the zero time.
func parseTime(s string) (time.Time, error) {
	switch s {
	case "", "N/A", "Unknown", "None", "NONE", "0":
		return time.Time{}, nil
	}
	if !isDigits(s) || len(s) > 12 {
		return time.Time{}, fmt.Errorf("slurm: malformed time %q", s)
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("slurm: malformed time %q", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// queue runs squeue once with extra selection flags. Malformed records are
// left out (and logged, see malformed).
func (c *Client) queue(ctx context.Context, extra ...string) ([]queueEntry, error) {
	sep := newSeparator()
	out, err := c.Site.Run(ctx, nil, squeueCmd(sep, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("squeue: %w", err)
	}
	entries, err := parseQueue(out, sep)
	if err != nil {
		c.malformed("squeue", err)
	}
	return entries, nil
}

// queueJob asks squeue about one job. found is false when squeue no longer
// knows it.
func (c *Client) queueJob(ctx context.Context, id JobID) (e queueEntry, found bool, err error) {
	entries, err := c.queue(ctx, "-j", string(id))
	if err != nil {
		if code, stderr := exitCode(err); code > 0 && strings.Contains(stderr, "Invalid job id") {
			return queueEntry{}, false, nil
		}
		return queueEntry{}, false, err
	}
	for _, e := range entries {
		if e.ID == string(id) {
			return e, true, nil
		}
	}
	return queueEntry{}, false, nil
}

// newestNamed is the newest job called name among entries.
func newestNamed(entries []queueEntry, name string) (queueEntry, bool) {
	var best queueEntry
	var bestID uint64
	found := false
	for _, e := range entries {
		id, err := strconv.ParseUint(e.ID, 10, 64)
		if e.Name != name || err != nil {
			continue
		}
		if !found || id > bestID {
			best, bestID, found = e, id, true
		}
	}
	return best, found
}
