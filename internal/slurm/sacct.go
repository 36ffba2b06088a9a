package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// acctFields are the sacct -o fields. sacct -p separates and ends them with
// the separator of the call given as --delimiter (see splitRecords), so
// that the job name, the one field a user fills freely, cannot pass for
// another job's line.
const acctFields = "JobID,State,ExitCode,Reason,NodeList,Start,End,JobName"

// acctFieldCount is the number of acctFields.
const acctFieldCount = 8

// acctEpoch starts sacct's window when looking a job up by name (sacct
// otherwise looks at today's jobs only).
const acctEpoch = "2000-01-01T00:00:00"

// sacctCmd is the sacct command line for job allocations (no steps), in
// records ended by sep, with extra selection flags.
func sacctCmd(sep string, extra ...string) []string {
	args := append(append([]string{}, timeEnv...), "sacct", "-n", "-p", "--delimiter="+sep, "-X", "-o", acctFields)
	return append(args, extra...)
}

// acctEntry is one record of sacct output. Host is the first node of the
// job's node list, as Slurm printed it, and is validated before it is passed on.
type acctEntry struct {
	ID     string
	State  State
	Exit   ExitCode
	Reason string
	Host   string
	Start  time.Time
	End    time.Time
	Name   string
}

// parseAcctRecord parses the fields of one sacct record.
func parseAcctRecord(f []string) (acctEntry, error) {
	if len(f) != acctFieldCount {
		return acctEntry{}, fmt.Errorf("sacct: malformed record %q", strings.Join(f, "|"))
	}
	e := acctEntry{ID: f[0], Host: firstNode(f[4]), Name: f[7]}
	if !anyJobID.MatchString(e.ID) {
		return acctEntry{}, fmt.Errorf("sacct: malformed job id in %q", strings.Join(f, "|"))
	}
	var err error
	if e.State, err = ParseState(f[1]); err != nil {
		return acctEntry{}, fmt.Errorf("sacct: %w", err)
	}
	if e.Exit, err = ParseExitCode(f[2]); err != nil {
		return acctEntry{}, fmt.Errorf("sacct: %w", err)
	}
	if e.Reason, err = parseReason(f[3]); err != nil {
		return acctEntry{}, fmt.Errorf("sacct: %w", err)
	}
	if e.Start, err = parseTime(f[5]); err != nil {
		return acctEntry{}, fmt.Errorf("sacct: %w", err)
	}
	if e.End, err = parseTime(f[6]); err != nil {
		return acctEntry{}, fmt.Errorf("sacct: %w", err)
	}
	return e, nil
}

// parseAcct parses sacct output in records ended by sep. Malformed records,
// and every record of a job ID listed more than once, are left out and
// reported together in err; the other entries are returned all the same.
func parseAcct(out []byte, sep string) ([]acctEntry, error) {
	records, errs := splitRecords(out, sep, acctFieldCount)
	for i := range errs {
		errs[i] = fmt.Errorf("sacct: %w", errs[i])
	}
	var entries []acctEntry
	for _, f := range records {
		if strings.Contains(strings.Join(f[:len(f)-1], ""), "\n") { // only the name, last, may
			errs = append(errs, fmt.Errorf("sacct: newline in a field of %q", strings.Join(f, "|")))
			continue
		}
		e, err := parseAcctRecord(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		entries = append(entries, e)
	}
	entries, repeated := dropRepeated(entries, func(e acctEntry) string { return e.ID })
	for _, err := range repeated {
		errs = append(errs, fmt.Errorf("sacct: %w", err))
	}
	return entries, errors.Join(errs...)
}

// accounting runs sacct once with extra selection flags. When the site
// keeps no accounting (no slurmdbd, or no sacct at all), it says so once in
// the log and from then on returns nothing without asking again.
func (c *Client) accounting(ctx context.Context, extra ...string) ([]acctEntry, error) {
	if c.noAcct.Load() {
		return nil, nil
	}
	sep := newSeparator()
	out, err := c.Site.Run(ctx, nil, sacctCmd(sep, extra...)...)
	if err != nil {
		if c.acctUnavailable(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("sacct: %w", err)
	}
	entries, err := parseAcct(out, sep)
	if err != nil {
		c.malformed("sacct", err)
	}
	return entries, nil
}

// acctUnavailable tells whether sacct failed with err because the site
// keeps no accounting (no slurmdbd, or no sacct at all); the first time,
// it says so in the log, and sacct is not run again.
func (c *Client) acctUnavailable(err error) bool {
	code, stderr := exitCode(err)
	if code != 127 && (code <= 0 || !strings.Contains(strings.ToLower(stderr), "accounting storage is disabled")) {
		return false
	}
	if c.noAcct.CompareAndSwap(false, true) {
		c.logger().Info("sacct: accounting unavailable at the site; using exit files only", "error", err)
	}
	return true
}
