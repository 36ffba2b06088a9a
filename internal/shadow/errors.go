package shadow

import "fmt"

// PodError is a reason the pod itself cannot have a shadow (a kept
// container needing what the shadow cannot carry, a namespace too long…):
// the provider refuses such a pod (S6) instead of retrying. Field names the
// part of the pod at fault.
type PodError struct {
	Field  string
	Reason string
}

func (e *PodError) Error() string { return e.Field + ": " + e.Reason }

func podErr(field, format string, args ...any) error {
	return &PodError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
