package slurm

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
)

// Names that reach command lines and paths are checked, whatever their
// source: pod UIDs come from the API server, job IDs and hosts from Slurm,
// and none of them is trusted. (names.go checks what the script takes.)
var (
	jobIDPattern = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)
)

// ParseJobID parses the ID of a job as sbatch and job.id give it.
func ParseJobID(s string) (JobID, error) {
	if !jobIDPattern.MatchString(s) {
		return "", fmt.Errorf("slurm: invalid job id %q", s)
	}
	return JobID(s), nil
}

// parseBatchHost checks a batch host reported by Slurm: a host name or an IP
// literal (hostname.CheckHost). Slurm's words for "none" give "".
func parseBatchHost(s string) (string, error) {
	switch s {
	case "", "n/a", "N/A", "(null)", "None", "None assigned":
		return "", nil
	}
	if err := hostname.CheckHost(s); err != nil {
		return "", fmt.Errorf("slurm: invalid batch host: %w", err)
	}
	return s, nil
}

// firstNode is the first node of a Slurm node list ("node1",
// "gpu[01-04,07]", "a[1-2],b3"), the batch host of a job that ran.
func firstNode(list string) string {
	depth := 0
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				list = list[:i] // ends the loop
			}
		}
	}
	open := strings.IndexByte(list, '[')
	if open < 0 {
		return list
	}
	shut := strings.IndexByte(list[open:], ']')
	if shut < 0 {
		return list
	}
	inner := list[open+1 : open+shut]
	if i := strings.IndexAny(inner, ",-"); i >= 0 {
		inner = inner[:i]
	}
	return list[:open] + inner + list[open+shut+1:]
}
