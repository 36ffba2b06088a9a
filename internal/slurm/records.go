package slurm

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// squeue and sacct print one job per line, fields side by side, and the job
// name as it was given: a job of the same account may be named with
// newlines and copies of other jobs' fields. So sluice asks them for records
// whose fields are separated, and ended, by a separator drawn at random for
// each call (squeue's format takes literal text; sacct -p takes a
// --delimiter and ends each line with it). A name cannot hold the separator
// of a call that had not started when the job was named, so a name cannot
// end a record or start one: it is read whole, newlines included, as the
// name of its own job.

// newSeparator draws the separator of one call: '|', 16 hex digits, '|'.
// It holds nothing a shell or Slurm's format reads.
func newSeparator() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "|" + hex.EncodeToString(b[:]) + "|"
}

// splitRecords splits out into records of n fields: each field followed by
// sep, each record by a newline. Cut at sep, the output is the fields in
// order, the first of every record but the first led by the newline that
// ended the one before, and a last newline: as no field holds sep, no name
// (whatever newlines it holds) can move a record's bounds. Output that does
// not follow this is reported in errs, and the records read before it are
// returned. Errors quote fields joined by '|', never sep, so that the same
// fault reads the same in every call.
func splitRecords(out []byte, sep string, n int) (records [][]string, errs []error) {
	if len(out) == 0 {
		return nil, nil
	}
	tokens := strings.Split(string(out), sep)
	last := tokens[len(tokens)-1]
	tokens = tokens[:len(tokens)-1]
	for len(tokens) >= n {
		f := tokens[:n:n]
		tokens = tokens[n:]
		if len(records) > 0 || len(errs) > 0 {
			first, ok := strings.CutPrefix(f[0], "\n")
			if !ok {
				return records, append(errs, fmt.Errorf("record not on a line of its own: %q", strings.Join(f, "|")))
			}
			f[0] = first
		}
		records = append(records, f)
	}
	if len(tokens) > 0 || last != "\n" {
		errs = append(errs, fmt.Errorf("unterminated record %q", strings.Join(append(tokens, last), "|")))
	}
	return records, errs
}

// dropRepeated leaves out every entry whose ID is listed more than once:
// which of them is the job's own line cannot be told.
func dropRepeated[E any](entries []E, id func(E) string) ([]E, []error) {
	seen := make(map[string]int, len(entries))
	for _, e := range entries {
		seen[id(e)]++
	}
	var kept []E
	var errs []error
	for _, e := range entries {
		switch n := seen[id(e)]; {
		case n == 1:
			kept = append(kept, e)
		case n > 1:
			errs = append(errs, fmt.Errorf("job id %s listed %d times", id(e), n))
			seen[id(e)] = -n // reported once
		}
	}
	return kept, errs
}
