//go:build e2e

package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// interLinkSite makes e's node one configured as interLink's: its taint
// instead of sluice's, GPUs in its capacity, and the plugin's flavors
// (a CPU default and a GPU flavor whose flags ask for one GPU).
func interLinkSite(t *testing.T, e *env) {
	cfg, err := os.ReadFile(e.cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	with := strings.Replace(string(cfg), "\nSite:\n", `
Site:
  DefaultFlavor: cpu
  Flavors:
    cpu: {CPUDefault: 1, MemoryDefault: 100M}
    gpu: {CPUDefault: 1, MemoryDefault: 200M, SlurmFlags: ["--gres=gpu:1"]}
`, 1)
	with = strings.Replace(with, "\nNode:\n", `
Node:
  GPUs: "2"
  Taints:
  - {Key: virtual-node.interlink/no-schedule, Value: "true", Effect: NoSchedule}
`, 1)
	if !strings.Contains(with, "DefaultFlavor") || !strings.Contains(with, "Taints") {
		t.Fatal("no Site: or Node: in the configuration")
	}
	if err := os.WriteFile(e.cfgFile, []byte(with), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInterLinkPodRunsUnchanged: a pod written as interLink's documentation
// writes one (its toleration only, space-separated sbatch flags with a
// short option, a GPU limit) is scheduled on a node configured as
// interLink's and runs through sluice-vk; its job carries the partition and
// time of its flags and the GPU flavor's gres and memory, read back from
// Slurm with scontrol.
func TestInterLinkPodRunsUnchanged(t *testing.T) {
	parallel(t)
	e := newEnvWith(t, "", func(e *env) { interLinkSite(t, e) })
	pod := e.pod("interlink", "echo started; sleep 600")
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "virtual-node.interlink/no-schedule", Operator: corev1.TolerationOpExists}}
	pod.Annotations = map[string]string{"slurm-job.vk.io/flags": "-p debug -t 00:10:00"}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	e.create(pod)
	e.waitPod("interlink", "Running", 120*time.Second, phaseIs(corev1.PodRunning))
	fields := e.scontrolJob(e.jobID("interlink"))
	for k, want := range map[string]string{"Partition": "debug", "TimeLimit": "00:10:00", "MinMemoryNode": "200M"} {
		if fields[k] != want {
			t.Errorf("scontrol shows %s=%q; want %q", k, fields[k], want)
		}
	}
	if got := fields["TresPerNode"]; !strings.Contains(got, "gpu:1") {
		t.Errorf("scontrol shows TresPerNode=%q; want gres:gpu:1 from the GPU flavor", got)
	}
}

// TestInterLinkTutorialPodRuns: a pod as interLink's tutorials write it, its
// flags under the legacy prefix slurm-job.knoc.io/ and naming its job, runs
// to its end; two Warning Events say that the legacy annotation was read as
// slurm-job.vk.io/flags and that the job name was dropped, and Slurm shows
// the job named after the pod UID, with the memory the flags ask for.
func TestInterLinkTutorialPodRuns(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	pod := e.pod("tutorial", "echo hello muu")
	pod.Annotations = map[string]string{"slurm-job.knoc.io/flags": "--job-name=tutorial --mem=100M"}
	pod = e.create(pod)
	done := e.waitPod("tutorial", "Succeeded", 90*time.Second, phaseIs(corev1.PodSucceeded))
	e.waitEvent(pod, "AnnotationLegacyPrefix: slurm-job.knoc.io/flags is read as slurm-job.vk.io/flags")
	e.waitEvent(pod, `SlurmFlagDropped: slurm-job.knoc.io/flags: "--job-name=tutorial" dropped: sluice names the job after the pod UID, `+string(pod.UID))

	fields := e.scontrolJob(jobID(done))
	if fields["JobName"] != string(pod.UID) || fields["MinMemoryNode"] != "100M" {
		t.Errorf("scontrol shows JobName=%q MinMemoryNode=%q; want the pod UID %s and 100M", fields["JobName"], fields["MinMemoryNode"], pod.UID)
	}
	if got := e.logs("tutorial", corev1.PodLogOptions{}); len(got) != 1 || got[0] != "hello muu" {
		t.Errorf("logs: got %q; want [hello muu]", got)
	}
}

// scontrolJob is what scontrol shows of job, by field: JobName, Partition, …
func (e *env) scontrolJob(job string) map[string]string {
	e.t.Helper()
	out, err := e.site.Run(context.Background(), nil, "scontrol", "show", "job", "-o", job)
	if err != nil {
		e.t.Fatalf("scontrol show job %s: %v", job, err)
	}
	fields := map[string]string{}
	for _, f := range strings.Fields(string(out)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	return fields
}
