package shadow

import (
	"fmt"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// A reason the pod itself cannot have a shadow (a kept container needing
// what the shadow cannot carry, a namespace too long…) is a
// *jobscript.PodError, as for a pod that cannot become a job: the provider
// refuses such a pod (S6) instead of retrying. Field names the part of the
// pod at fault.
func podErr(field, format string, args ...any) error {
	return &jobscript.PodError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
