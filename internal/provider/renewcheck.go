package provider

import (
	"errors"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/sbatch"
	corev1 "k8s.io/api/core/v1"
)

// renewBefore is the lead time the pod asks its jobs to be renewed with
// (annotations.RenewBefore, SPEC S16), 0 for none; a pod for which renewal
// cannot work is a refusal.
func renewBefore(pod *corev1.Pod) (time.Duration, *refusal) {
	rp := annotations.RenewalPod{RestartPolicy: string(pod.Spec.RestartPolicy)}
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		rp.TimeLimit = time.Duration(*d) * time.Second
	}
	if v := pod.Annotations[annotations.Flags]; v != "" {
		// a malformed flag is refused by FromPod, with its own words
		flags, _ := sbatch.SplitFlags(v)
		for _, f := range flags {
			rp.FlagsSetTime = rp.FlagsSetTime || strings.HasPrefix(f, "--time=")
		}
	}
	d, err := annotations.CheckRenewal(pod.Annotations, rp)
	var r *annotations.Refusal
	if errors.As(err, &r) {
		return 0, &refusal{reason: string(r.Reason), field: "metadata.annotations[" + r.Annotation + "]", rule: r.Rule}
	}
	return d, nil
}
