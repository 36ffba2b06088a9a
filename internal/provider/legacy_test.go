package provider

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
)

const legacyFlags = annotations.LegacyJobPrefix + "flags"

// A pod written as interLink's tutorials write it runs: its legacy flags
// are read as slurm-job.vk.io/flags, its job name dropped, each with a
// Warning Event; the legacy annotation is kept with the job and freezes
// with the others once the job is submitted.
func TestLegacyFlagsRunAndFreeze(t *testing.T) {
	pod := testPod("tutorial")
	pod.Annotations = map[string]string{legacyFlags: "--job-name=tutorial --mem=100M"}
	h := start(t, pod, &fakeShadows{}, func(*Config) {})
	h.waitEvent("submitted as Slurm job 101")
	h.waitEvent("Warning " + annotations.EventLegacyPrefix + " " + legacyFlags + " is read as " + annotations.Flags)
	h.waitEvent("Warning " + jobscript.ReasonFlagDropped + " " + legacyFlags + `: "--job-name=tutorial" dropped: sluice names the job after the pod UID, ` + string(pod.UID))
	h.jobs.mu.Lock()
	flags, kept := h.jobs.lastJob.Flags, h.jobs.submitted[string(pod.UID)]
	h.jobs.mu.Unlock()
	if !slices.Equal(flags, []string{"--mem=100M"}) {
		t.Errorf("job flags %q; want --mem=100M only", flags)
	}
	if !maps.Equal(kept, pod.Annotations) {
		t.Errorf("the job keeps annotations %v; want %v, for a restart", kept, pod.Annotations)
	}

	h.annotate(pod, map[string]string{legacyFlags: "--wrap=id"})
	h.waitEvent("Warning " + EventAnnotationChangeIgnored + " " + legacyFlags + " changed after the pod was submitted as Slurm job 101")
	got, err := h.p.GetPod(context.Background(), pod.Namespace, pod.Name)
	if err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	if got.Annotations[legacyFlags] != "--job-name=tutorial --mem=100M" {
		t.Errorf("got annotations %v; want the legacy flags as submitted", got.Annotations)
	}
}

// A legacy annotation patched while the submission waits is checked as
// its new name is: a job name is not all sluice refuses.
func TestLegacyFlagsCheckedBeforeSubmission(t *testing.T) {
	pod := waitingForConfigMap("late-legacy")
	pod.Annotations = map[string]string{legacyFlags: "-J x"}
	h := start(t, pod, &fakeShadows{}, func(*Config) {})
	h.waitForConfigMap(pod)
	h.annotate(pod, map[string]string{legacyFlags: "-J x -o /tmp/x"})
	h.createLater()
	h.waitRefusedOrSubmitted(pod)
	if submits, _, _, _ := h.jobs.counts(); submits != 0 {
		// the attempt in flight when the patch came submits what it checked
		h.jobs.mu.Lock()
		flags := h.jobs.lastJob.Flags
		h.jobs.mu.Unlock()
		if len(flags) != 0 {
			t.Fatalf("submitted with flags %q; want the pod refused, or none from before the patch", flags)
		}
		h.waitEvent("Warning " + EventAnnotationChangeIgnored)
		return
	}
	got := h.last(pod)
	field := "metadata.annotations[" + legacyFlags + "]"
	if got.Status.Reason != ReasonRefused || !strings.Contains(got.Status.Message, field) || !strings.Contains(got.Status.Message, "--output is set by sluice") {
		t.Errorf("got reason %q message %q; want %s naming %s and --output", got.Status.Reason, got.Status.Message, ReasonRefused, field)
	}
}
