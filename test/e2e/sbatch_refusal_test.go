//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWhatSbatchRefusesFailsThePod: a pod whose job sbatch would refuse at
// every submission fails at once with the reason instead of waiting
// Pending for ever. A CR LF in an argument is refused by sluice before
// anything is submitted; a flag value only sbatch checks is refused by the
// rig's sbatch, whose words the pod then carries, after one attempt. An
// option the site's sbatch lacks (22.05 has no --tres-per-task, 24.11
// dropped --power) is refused at creation in the site's name, from the
// options sluice-vk learned at start, which the node's annotation tells.
func TestWhatSbatchRefusesFailsThePod(t *testing.T) {
	parallel(t)
	eachSite(t, whatSbatchRefusesFailsThePod)
}

// lackedOption is, by the site's Slurm, an sbatch option that sluice
// knows and the site's sbatch lacks.
var lackedOption = map[string]string{firstSite: "--tres-per-task=cpu=1", secondSite: "--power=level"}

func whatSbatchRefusesFailsThePod(t *testing.T, on rigSite) {
	e := newEnvOn(t, on.rig, "", nil)

	dos := e.pod("dos", "echo hi")
	dos.Spec.Containers[0].Args = []string{"line one\r\nline two"}
	dosUID := e.create(dos).UID
	got := e.waitPod("dos", "Failed", 60*time.Second, phaseIs(corev1.PodFailed))
	if got.Status.Reason != "SluiceRefused" || !strings.Contains(got.Status.Message, "spec.containers[0].args[0]") ||
		!strings.Contains(got.Status.Message, "CR LF") {
		t.Errorf("got reason %q message %q; want SluiceRefused naming spec.containers[0].args[0] and the CR LF", got.Status.Reason, got.Status.Message)
	}
	e.waitEvent(got, "refused: spec.containers[0].args[0]")
	if jobs := e.squeue(string(dosUID)); len(jobs) != 0 {
		t.Errorf("got Slurm jobs %v for a refused pod; want none", jobs)
	}

	late := e.pod("late", "echo hi")
	late.Annotations = map[string]string{jobscript.AnnotationFlags: "--time=soon"}
	lateUID := e.create(late).UID
	got = e.waitPod("late", "Failed", 60*time.Second, phaseIs(corev1.PodFailed))
	const want = "refused: sbatch: Invalid --time specification"
	if got.Status.Reason != "SluiceRefused" || got.Status.Message != want {
		t.Errorf("got reason %q message %q; want SluiceRefused and %q", got.Status.Reason, got.Status.Message, want)
	}
	e.waitEvent(got, want)
	for _, ev := range e.events(got) {
		if strings.HasPrefix(ev, "SubmitWaiting:") {
			t.Errorf("got Event %q; want the pod failed at the first refusal, not waiting to submit again", ev)
		}
	}
	if jobs := e.squeue(string(lateUID)); len(jobs) != 0 {
		t.Errorf("got Slurm jobs %v for a pod sbatch refused; want none", jobs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	learned := node.Annotations["sluice.io/sbatch-options"]
	version, _, _ := strings.Cut(strings.TrimPrefix(learned, "sbatch "), ": ")
	if !strings.HasPrefix(learned, "sbatch "+on.slurm+".") {
		t.Errorf("node annotation sluice.io/sbatch-options: got %q; want the options learned from sbatch %s", learned, on.slurm)
	}
	newer := e.pod("newer", "echo hi")
	flag := lackedOption[on.slurm]
	newer.Annotations = map[string]string{jobscript.AnnotationFlags: flag}
	e.create(newer)
	got = e.waitPod("newer", "Failed", 60*time.Second, phaseIs(corev1.PodFailed))
	name, _, _ := strings.Cut(flag, "=")
	if want := "sbatch " + version + " at the site has no option " + name; !strings.Contains(got.Status.Message, want) {
		t.Errorf("got reason %q message %q; want %q", got.Status.Reason, got.Status.Message, want)
	}
}
