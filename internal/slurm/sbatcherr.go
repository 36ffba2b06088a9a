package slurm

import (
	"errors"
	"strings"

	"github.com/sluice-hpc/sluice/internal/site"
)

// RefusedError is sbatch refusing a job for what it holds: its script, an
// option or an option's value. Submitting the same job again cannot
// succeed. Message is sbatch's own, its lines joined.
type RefusedError struct {
	Message string
}

func (e *RefusedError) Error() string { return "sbatch refused the job: " + e.Message }

// What sbatch says, lower-cased, when the job itself is at fault (as seen
// from Slurm 22.05's sbatch and slurmctld): getopt's words for an option,
// sbatch's checks of the script, the "Invalid ..." of a value or of a
// name the cluster does not have, and a request no node can satisfy.
var sbatchRefusals = []string{
	"unrecognized option", "invalid option", "requires an argument",
	"doesn't allow an argument", "is ambiguous",
	"dos line breaks", "null character", "does not look like a batch script",
	"batch script is empty",
	"invalid",
	"requested node configuration is not available",
	"requested reservation is invalid",
	"can not be satisfied",
}

// What sbatch says when the controller or the way to it is at fault: the
// same job may be taken later. It wins over sbatchRefusals.
var sbatchTransient = []string{
	"socket timed out", "unable to contact slurm controller",
	"temporarily unable", "temporarily unavailable", "try again",
	"connection refused", "connection reset", "zero bytes were transmitted",
	"communication connection failure", "not responding",
	// munge and user look-ups failing on the controller's side
	"munge", "credential", "authentication", "invalid user id",
}

// sbatchRefused tells whether err, from running sbatch, is sbatch refusing
// the job, and returns a *RefusedError for it.
func sbatchRefused(err error) (*RefusedError, bool) {
	var ee *site.ExitError
	if !errors.As(err, &ee) || strings.TrimSpace(ee.Stderr) == "" {
		return nil, false
	}
	text := strings.ToLower(ee.Stderr)
	for _, s := range sbatchTransient {
		if strings.Contains(text, s) {
			return nil, false
		}
	}
	for _, s := range sbatchRefusals {
		if strings.Contains(text, s) {
			return &RefusedError{Message: sbatchMessage(ee.Stderr)}, true
		}
	}
	return nil, false
}

// sbatchMessage joins sbatch's lines without its prefixes and its hint
// to run --help: "sbatch: error: Invalid --time specification" gives
// "Invalid --time specification".
func sbatchMessage(stderr string) string {
	var parts []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(line, "sbatch: ")
		line = strings.TrimPrefix(line, "error: ")
		if line == "" || strings.HasPrefix(line, "Try \"sbatch --help\"") {
			continue
		}
		parts = append(parts, line)
	}
	return strings.Join(parts, " ")
}
