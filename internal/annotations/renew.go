package annotations

import (
	"fmt"
	"strings"
	"time"
)

// RenewBefore asks for a successor job before the pod's job reaches its
// time limit (SPEC S16): "20m" submits the successor once Slurm says the
// running job has less than 20 minutes left, so that the service outlives
// the site's walltime.
const RenewBefore = "sluice.io/renew-before"

// Bounds of RenewBefore. Below MinRenewBefore a successor has no time to
// be submitted, scheduled and started before the job it replaces ends (one
// status poll alone is 5 s); above MaxRenewBefore the value is a mistake
// rather than a lead time: no site keeps a job pending for a week to hand
// over a service.
const (
	MinRenewBefore = 30 * time.Second
	MaxRenewBefore = 7 * 24 * time.Hour
)

// ParseRenewBefore parses the value of RenewBefore: a Go duration of whole
// seconds ("20m", "1h30m", "90s") between MinRenewBefore and MaxRenewBefore.
// An empty value is no renewal (0, nil).
func ParseRenewBefore(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || strings.TrimSpace(v) != v {
		return 0, renewalRefusal(fmt.Sprintf("%q is not a duration such as 20m", truncate(v)))
	}
	switch {
	case d%time.Second != 0:
		return 0, renewalRefusal(fmt.Sprintf("%s is not a whole number of seconds (Slurm counts time left in seconds)", v))
	case d < MinRenewBefore:
		return 0, renewalRefusal(fmt.Sprintf("%s is less than %s: a successor job needs that long to be submitted and to start", v, MinRenewBefore))
	case d > MaxRenewBefore:
		return 0, renewalRefusal(fmt.Sprintf("%s is more than %s", v, MaxRenewBefore))
	}
	return d, nil
}

// RenewalPod is what CheckRenewal reads of a pod besides its annotations.
type RenewalPod struct {
	// RestartPolicy is the pod's spec.restartPolicy ("" is Always).
	RestartPolicy string
	// TimeLimit is the job's time limit the pod sets
	// (spec.activeDeadlineSeconds), 0 for none.
	TimeLimit time.Duration
	// FlagsSetTime: the pod's slurm-job.vk.io/flags set --time (or -t),
	// a limit known only to Slurm until the job runs.
	FlagsSetTime bool
}

// CheckRenewal parses RenewBefore and checks that it can work for the pod:
// the job has a time limit of the pod's, longer than the lead time, and the
// pod's containers are restarted by their policy, so that running them
// again in a successor job is what the pod asked for. It returns 0 and nil
// for a pod that does not ask for renewal.
func CheckRenewal(annotations map[string]string, pod RenewalPod) (time.Duration, error) {
	v, ok := annotations[RenewBefore]
	if !ok {
		return 0, nil
	}
	if v == "" {
		return 0, renewalRefusal("empty: give a duration such as 20m, or leave the annotation out")
	}
	d, err := ParseRenewBefore(v)
	if err != nil {
		return 0, err
	}
	switch {
	case pod.RestartPolicy != "" && pod.RestartPolicy != "Always":
		return 0, renewalRefusal(fmt.Sprintf(
			"restartPolicy %s: a successor job runs the containers again from the start, which only a pod with restartPolicy Always asks for", pod.RestartPolicy))
	case pod.TimeLimit == 0 && !pod.FlagsSetTime:
		return 0, &Refusal{Reason: ReasonRenewal, Annotation: RenewBefore, Rule: "the pod sets no time limit (spec.activeDeadlineSeconds, or --time in " + Flags + "): there is no walltime to renew before"}
	case annotations[ReverseForwards] != "" || annotations[ReverseSocksPort] != "":
		return 0, renewalRefusal("not with a reverse tunnel (" + ReverseForwards + ", " + ReverseSocksPort +
			"): the shadow's reverse tunnel serves one job's socket directory at a time, and a successor's relay waits for its own before its containers start")
	case pod.TimeLimit > 0 && d >= pod.TimeLimit:
		return 0, renewalRefusal(fmt.Sprintf(
			"%s is not less than the job's time limit %s (spec.activeDeadlineSeconds): each job would be renewed as soon as it starts", v, pod.TimeLimit))
	}
	return d, nil
}

// renewalRefusal refuses RenewBefore for rule.
func renewalRefusal(rule string) *Refusal {
	return &Refusal{Reason: ReasonRenewal, Annotation: RenewBefore, Rule: rule}
}
