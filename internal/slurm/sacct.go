package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// acctFields are the sacct -o fields, the job name last: it is the one a
// user fills freely, and -P separates fields with '|'.
const acctFields = "JobID,State,ExitCode,Reason,NodeList,Start,End,JobName"

// acctEpoch starts sacct's window when looking a job up by name (sacct
// otherwise looks at today's jobs only).
const acctEpoch = "2000-01-01T00:00:00"

// sacctCmd is the sacct command line for job allocations (no steps), with
// extra selection flags.
func sacctCmd(extra ...string) []string {
	args := append(append([]string{}, timeEnv...), "sacct", "-n", "-P", "-X", "-o", acctFields)
	return append(args, extra...)
}

// acctEntry is one line of sacct output. Host is the first node of the
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

// parseAcctLine parses one line of sacct -n -P -o acctFields.
func parseAcctLine(line string) (acctEntry, error) {
	f := strings.SplitN(line, "|", 8)
	if len(f) != 8 {
		return acctEntry{}, fmt.Errorf("sacct: malformed line %q", line)
	}
	e := acctEntry{ID: f[0], Host: firstNode(f[4]), Name: f[7]}
	if !anyJobID.MatchString(e.ID) {
		return acctEntry{}, fmt.Errorf("sacct: malformed job id in %q", line)
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

// parseAcct parses sacct output. Malformed lines are left out and reported
// together in err; the well-formed entries are returned all the same.
func parseAcct(out []byte) ([]acctEntry, error) {
	var entries []acctEntry
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		e, err := parseAcctLine(line)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		entries = append(entries, e)
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
	out, err := c.Site.Run(ctx, nil, sacctCmd(extra...)...)
	if err != nil {
		if code, stderr := exitCode(err); code == 127 ||
			code > 0 && strings.Contains(strings.ToLower(stderr), "accounting storage is disabled") {
			if c.noAcct.CompareAndSwap(false, true) {
				c.logger().Info("sacct: accounting unavailable at the site; using exit files only", "error", err)
			}
			return nil, nil
		}
		return nil, fmt.Errorf("sacct: %w", err)
	}
	entries, err := parseAcct(out)
	if err != nil {
		c.malformed("sacct", err)
	}
	return entries, nil
}
