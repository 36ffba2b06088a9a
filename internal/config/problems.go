package config

import (
	"errors"
	"strings"
)

// Problems splits an error of Load, Parse or Validate into its problems, one
// line each, every one keeping the prefixes that wrap it ("config FILE:
// Network.SSH.Port: must be 1-65535, got 0"), so that each line reads alone.
func Problems(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, Problems(e)...)
		}
		return out
	}
	msg := err.Error()
	if inner := errors.Unwrap(err); inner != nil && strings.HasSuffix(msg, inner.Error()) {
		prefix := strings.TrimSuffix(msg, inner.Error())
		out := Problems(inner)
		for i := range out {
			out[i] = prefix + out[i]
		}
		return out
	}
	return strings.Split(msg, "\n")
}
