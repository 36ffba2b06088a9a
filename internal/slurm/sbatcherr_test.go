package slurm

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-hpc/sluice/internal/site"
)

func TestSbatchRefused(t *testing.T) {
	exit := func(code int, stderr string) error {
		return fmt.Errorf("sbatch x: %w", &site.ExitError{Args: []string{"sbatch"}, Code: code, Stderr: stderr})
	}
	// The refusals are what the rig's sbatch (Slurm 22.05) said.
	for _, tc := range []struct {
		name string
		err  error
		want string // the message of the refusal; "" for none (retry)
	}{
		{"dos line breaks", exit(1, "sbatch: error: Batch script contains DOS line breaks (\\r\\n)\nsbatch: error: instead of expected UNIX line breaks (\\n).\n"),
			`Batch script contains DOS line breaks (\r\n) instead of expected UNIX line breaks (\n).`},
		{"nul", exit(1, "sbatch: error: The Slurm controller does not allow scripts that\nsbatch: error: contain a NULL character '\\0'.\n"),
			`The Slurm controller does not allow scripts that contain a NULL character '\0'.`},
		{"unknown option", exit(255, "sbatch: unrecognized option '--foo=1'\nTry \"sbatch --help\" for more information\n"), "unrecognized option '--foo=1'"},
		{"no value", exit(255, "sbatch: option '--partition' requires an argument\nTry \"sbatch --help\" for more information\n"), "option '--partition' requires an argument"},
		{"a value", exit(255, "sbatch: option '--contiguous' doesn't allow an argument\nTry \"sbatch --help\" for more information\n"), "option '--contiguous' doesn't allow an argument"},
		{"ambiguous", exit(255, "sbatch: option '--mail=x' is ambiguous; possibilities: '--mail-type' '--mail-user'\n"), "option '--mail=x' is ambiguous; possibilities: '--mail-type' '--mail-user'"},
		{"bad value", exit(255, "sbatch: error: Invalid --time specification\n"), "Invalid --time specification"},
		{"no partition", exit(1, "sbatch: error: invalid partition specified: nosuch\nsbatch: error: Batch job submission failed: Invalid partition name specified\n"),
			"invalid partition specified: nosuch Batch job submission failed: Invalid partition name specified"},
		{"no node", exit(1, "sbatch: error: Memory specification can not be satisfied\nsbatch: error: Batch job submission failed: Requested node configuration is not available\n"),
			"Memory specification can not be satisfied Batch job submission failed: Requested node configuration is not available"},
		{"reservation", exit(1, "sbatch: error: Batch job submission failed: Requested reservation is invalid\n"), "Batch job submission failed: Requested reservation is invalid"},
		{"no shebang", exit(1, "sbatch: error: This does not look like a batch script.  The first\nsbatch: error: line must start with #! followed by the path to an interpreter.\n"),
			"This does not look like a batch script.  The first line must start with #! followed by the path to an interpreter."},

		{"controller down", exit(1, "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n"), ""},
		{"socket timeout", exit(1, "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"), ""},
		{"busy", exit(1, "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\nsbatch: error: Batch job submission failed: Resource temporarily unavailable\n"), ""},
		{"munge", exit(1, "sbatch: error: Munge decode failed: Invalid credential\n"), ""},
		{"user lookup", exit(1, "sbatch: error: Batch job submission failed: Invalid user id\n"), ""},
		{"qos limit", exit(1, "sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)\n"), ""},
		{"script gone", exit(1, "sbatch: error: Unable to open file /data/ns/uid/job.sh\n"), ""},
		{"no stderr", exit(1, ""), ""},
		{"connection lost", errors.New("ssh: connection lost"), ""},
		{"killed", &site.SignalError{Args: []string{"sbatch"}, Signal: "KILL", Stderr: "Invalid"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := sbatchRefused(tc.err)
			switch {
			case tc.want == "" && ok:
				t.Errorf("got refusal %q; want a retry", r.Message)
			case tc.want != "" && !ok:
				t.Errorf("got a retry; want refusal %q", tc.want)
			case ok && r.Message != tc.want:
				t.Errorf("got message %q; want %q", r.Message, tc.want)
			}
		})
	}
}
